-- The same folding as 0021, at a fraction of its cost. translate() looks each character of its
-- input up in its "from" list one by one, so 0021's single translate over 486 letters cost ~48 us
-- per item (38 characters) even for plain ASCII: 10.0 s for the 210,535 items of a quarter of the
-- large bench corpus, where to_tsvector alone took 0.6 s. In a nightly run at 1M messages (issue
-- 14: writing facts, dailies and historicals fills memory_items) the server used 89 CPU-s with it,
-- 52 with this function.
-- mempipe_fold_diacritics skips a text with no letter of the four Latin blocks the 486 letters
-- come from (one regex test), and translates only the blocks the text has letters of. The result is
-- the same as 0021's for every text (each block's letters map to ASCII letters, which no other
-- block's list holds), plus the long s (ſ, ẛ), which SQLite's tokenizer folds to "s" as a case and
-- PostgreSQL's lower() keeps: tests/integration/test_search_diacritics.py checks every letter of
-- the four blocks against SQLite's tokenizer. The function is immutable, as a generated column
-- needs; `terms` and its index are made again.
CREATE FUNCTION mempipe_fold_diacritics(body text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF body !~ '[\u00C0-\u024F\u1E00-\u1EFF]' THEN
        RETURN body;
    END IF;
    IF body ~ '[\u00C0-\u00FF]' THEN  -- Latin-1 Supplement: 53 letters
        body := translate(body,
            'ÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖÙÚÛÜÝàáâãäåçèéêëìíîïñòóôõöùúûüýÿ',
            'AAAAAACEEEEIIIINOOOOOUUUUYaaaaaaceeeeiiiinooooouuuuyy');
    END IF;
    IF body ~ '[\u0100-\u017F]' THEN  -- Latin Extended-A: 109 letters
        body := translate(body,
            'ĀāĂăĄąĆćĈĉĊċČčĎďĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĨĩĪīĬĭĮįİĴĵĶķĹĺĻļĽľŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŨũŪūŬ'
            'ŭŮůŰűŲųŴŵŶŷŸŹźŻżŽžſ',
            'AaAaAaCcCcCcCcDdEeEeEeEeEeGgGgGgGgHhIiIiIiIiIJjKkLlLlLlNnNnNnOoOoOoRrRrRrSsSsSsSsTtTtUuUuU'
            'uUuUuUuWwYyYZzZzZzs');
    END IF;
    IF body ~ '[\u0180-\u024F]' THEN  -- Latin Extended-B: 81 letters
        body := translate(body,
            'ƠơƯưǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǦǧǨǩǪǫǬǭǰǴǵǸǹǺǻȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗȘșȚțȞȟȦȧȨȩȪȫȬȭȮȯȰȱȲȳ',
            'OoUuAaIiOoUuUuUuUuUuAaGgKkOoOojGgNnAaAaAaEeEeIiIiOoOoRrRrUuUuSsTtHhAaEeOoOoOoOoYy');
    END IF;
    IF body ~ '[\u1E00-\u1EFF]' THEN  -- Latin Extended Additional: 245 letters
        body := translate(body,
            'ḀḁḂḃḄḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷḸḹḺḻḼḽḾḿṀṁṂṃṄṅṆṇṈṉṊṋṌṍṎṏṐṑṒṓṔṕṖṗṘṙ'
            'ṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẖẗẘẙẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵẶặẸẹ'
            'ẺẻẼẽẾếỀềỂểỄễỆệỈỉỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰựỲỳỴỵỶỷỸỹẛ',
            'AaBbBbBbCcDdDdDdDdDdEeEeEeEeEeFfGgHhHhHhHhHhIiIiKkKkKkLlLlLlLlMmMmMmNnNnNnNnOoOoOoOoPpPpRr'
            'RrRrRrSsSsSsSsSsTtTtTtTtUuUuUuUuUuVvVvWwWwWwWwWwXxXxYyZzZzZzhtwyAaAaAaAaAaAaAaAaAaAaAaAaEe'
            'EeEeEeEeEeEeEeIiIiOoOoOoOoOoOoOoOoOoOoOoOoUuUuUuUuUuUuUuYyYyYyYys');
    END IF;
    RETURN body;
END
$$;

ALTER TABLE memory_items DROP COLUMN terms;
ALTER TABLE memory_items ADD COLUMN terms tsvector GENERATED ALWAYS AS (
    to_tsvector('english'::regconfig, mempipe_fold_diacritics(body))) STORED;
CREATE INDEX memory_items_terms ON memory_items USING gin (terms);
