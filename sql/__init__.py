"""SQL shipped with mempipe, installed as the package `pipeline.sql` (see setup.py).

This file only makes the directory a regular package: setuptools' editable installs map a
package to its directory only when it has an __init__.py. Read the files through
pipeline.resources.
"""
