"""Package layout; everything else is in pyproject.toml.

sql/, prompts/ and config/ stay at the repository root but install as subpackages of pipeline,
so a wheel carries them and pipeline.resources finds them with importlib.resources. The mapping
lives here rather than in pyproject.toml because pyproject.toml cannot combine a package search
(new subpackages of pipeline ship without a list to update) with extra mapped packages.
"""

from setuptools import find_namespace_packages, setup

RESOURCES = {"pipeline.sql": "sql", "pipeline.prompts": "prompts", "pipeline.config_files": "config"}
DATA = {
    "pipeline.sql": ["*.sql"],
    "pipeline.sql.migrations": ["*.sql"],  # a data directory, listed so setuptools ships it
    "pipeline.prompts": ["*.j2", "*.txt"],
    "pipeline.config_files": ["*.toml"],
}

setup(
    packages=find_namespace_packages(include=["pipeline", "pipeline.*"], exclude=["*.__pycache__"])
    + list(DATA),
    package_dir=RESOURCES,
    # the status page's templates ship inside their (ordinary) package
    package_data={**DATA, "pipeline.web": ["templates/*.j2"]},
)
