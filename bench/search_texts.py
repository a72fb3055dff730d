"""The words of the search corpus (bench/search_corpus.py): fact templates, each with questions a
user would ask about it, background facts, and the small talk that daily and historical
summaries are made of. Written before any search result was seen, from how people talk and how
the summarizer words facts ("Works as a designer at Canva"; third person, no name).

Each fact template carries two kinds of question:
- **same words**: the question repeats the fact's key words, in another form ("adopted" / "what
  dog did I adopt?": the same stem after stemming; "allergic" / "allergies" included, though a
  stemmer may not join them);
- **different words**: the question names what it asks about with other words; the first of a
  template's two keeps one of the fact's words ("what's the name of my puppy?"), the second none
  ("what's my puppy called?"): a lexical engine has little, or nothing, to match. (Measured, not
  assumed: the section counts the questions whose fact holds any of their words as each engine
  stems them.)
"""

from __future__ import annotations


def _pool(s: str) -> list[str]:
    return [" ".join(w.split()) for w in s.split("|") if w.strip()]


SLOTS = {
    "breed": _pool("beagle|corgi|labrador|greyhound|dachshund|border collie|pug|husky|whippet|shiba inu|poodle|"
                   "spaniel|terrier|boxer|dalmatian"),
    "pet": _pool("Max|Biscuit|Olive|Pepper|Bruno|Luna|Pickles|Mochi|Ziggy|Waffles|Noodle|Juniper|Basil|Nacho|"
                 "Clementine|Pretzel|Sprocket|Mango|Peanut|Loki|Freya|Taro|Churro|Mortimer|Dumpling|Fennel"),
    "role": _pool("designer|data analyst|backend developer|QA tester|product manager|support engineer|recruiter|"
                  "nurse|pharmacist|electrician|accountant|teacher|paramedic|architect|sound engineer|chef|"
                  "translator|lab technician"),
    "company": _pool("Spotify|Shopify|Canva|Figma|Zalando|Klarna|Datadog|Cloudflare|Stripe|Miro|Duolingo|Etsy|"
                     "Revolut|Mozilla|Ubisoft|Supercell|GitLab|Monzo|Wolt|Personio|Zendesk|the city hospital|"
                     "a small bakery|the public library|a law firm|a recycling plant|the local council"),
    "city": _pool("Porto|Tallinn|Ljubljana|Montevideo|Wellington|Kyoto|Sapporo|Busan|Taipei|Hanoi|Bergen|"
                  "Gothenburg|Aarhus|Utrecht|Ghent|Bologna|Seville|Valencia|Marseille|Leipzig|Salzburg|Basel|"
                  "Galway|Edinburgh|Cardiff|Halifax|Calgary|Boise|Tucson|Oaxaca|Cusco|Medellin|Hobart|Tbilisi|"
                  "Krakow|Vilnius|Riga|Plovdiv|Izmir|Penang|Mendoza|Cartagena"),
    "country": _pool("Japan|Portugal|Iceland|Peru|Vietnam|Morocco|Norway|Chile|Georgia|Mexico|Greece|Kenya|"
                     "New Zealand|Scotland|Croatia|Argentina|Thailand|Canada"),
    "month": _pool("January|February|March|April|May|June|July|August|September|October|November|December"),
    "allergen": _pool("peanuts|shellfish|cats|penicillin|bee stings|sesame|kiwi|latex|dust mites|gluten|eggs"),
    "sib": _pool("Ana|Lena|Sofia|Maya|Iris|Nora|Zoe|Elif|Hana|Tomas|Luca|Emil|Jonah|Felix|Ravi|Omar"),
    "subject": _pool("medicine|law|architecture|marine biology|economics|music|chemistry|history|nursing|"
                     "computer science|linguistics"),
    "instrument": _pool("cello|violin|viola|trumpet|clarinet|oboe|double bass|flute|trombone|french horn|bassoon"),
    "language": _pool("Japanese|Portuguese|Korean|German|Italian|Mandarin|Arabic|Turkish|Polish|Greek|Dutch|Welsh"),
    "colour": _pool("red|blue|green|silver|black|white|yellow|orange"),
    "car": _pool("Volvo estate|Fiat Panda|Toyota Corolla|Honda Civic|Mini Cooper|VW Golf|Subaru Outback|Kia Niro"),
    "book": _pool("Piranesi|The Left Hand of Darkness|Dune|Middlemarch|The Remains of the Day|Station Eleven|"
                  "Beloved|The Name of the Wind|Circe|The Overstory|Pachinko|Never Let Me Go|Rebecca"),
    "year": [str(y) for y in range(2008, 2025)],
    "day": [str(d) for d in range(1, 29)],
    "age": [str(a) for a in range(19, 61)],
    "game": _pool("Hades|Celeste|Terraria|Factorio|Hollow Knight|Stardew Valley|Outer Wilds|Disco Elysium|"
                  "Slay the Spire|Subnautica|Rimworld|Dead Cells|Undertale|Sekiro|Okami|Tunic|Dredge|Pikmin"),
    "band": _pool("Khruangbin|Radiohead|Tame Impala|Fleetwood Mac|Gorillaz|Daft Punk|Bon Iver|Mitski|Stromae|"
                  "Bjork|Paramore|Hozier|Alvvays|Caribou|Big Thief|Massive Attack|Mogwai"),
    "film": _pool("Spirited Away|Paddington 2|Arrival|Amelie|Heat|Alien|Moonlight|Parasite|Jaws|Oldboy"),
    "plant": _pool("Gerald|Fernando|Planty McPlantface|Sir Leaf|Big Steve|Monstera Mike"),
    "topic": _pool("a job interview|moving boxes|a trip to the coast|dog training tips|birthday cake recipes|"
                   "vegetarian recipes|learning guitar|a flat tyre|book recommendations|the weather|a new phone|"
                   "the football results|a marathon training plan|their commute|rent prices|a concert last night|"
                   "the new {game} update|a {game} speedrun|a holiday in {country}|their cat's vet visit|"
                   "learning {language}|a Netflix series|the office coffee machine|a broken washing machine|"
                   "sleep schedules|houseplants|a sourdough starter|allergy season|a pub quiz|their birthday plans|"
                   "a road trip|the server's movie night|a film recommendation|running shoes|a job offer|"
                   "a family dinner|their sister's wedding|board games|a bike repair|a dentist appointment|"
                   "cheap flights|a power cut|a noisy neighbour|working from home|a driving lesson|"
                   "a new keyboard|a thunderstorm|a cooking disaster|the gym|a music festival|a library card|"
                   "a long queue at the post office|hiking boots|a camping weekend|a pottery class|"
                   "orchestra tickets|a used car listing|an exam|their grandmother's recipes|a rescue shelter"),
    "thing": _pool("their lunch|a sunset|a very fat pigeon|their desk setup|a cake|a rainbow|their new shoes|"
                   "a dog at the park|a meme|their garden|a mountain view|a cosy cafe|a terrible parking job"),
}

# kind -> category, fact_key, [(fact template, same-word questions, different-word questions)]
KINDS: dict[str, tuple[str, str | None, list[tuple[str, list[str], list[str]]]]] = {
    "pet": ("other", "pet", [
        ("Adopted a {breed} named {pet}", ["what's the name of the dog I adopted?", "what did I name my {breed}?"],
         ["what's the name of my puppy?", "what's my puppy called?"]),
        ("Has a {breed} called {pet} who is scared of thunder",
         ["what is my {breed} called?", "which of my dogs is scared of thunder?"],
         ["what's my dog called?", "who hides under the bed during storms?"]),
    ]),
    "job": ("skill/work", "job", [
        ("Works as a {role} at {company}", ["where do I work?", "what's my role at work?"],
         ["which employer do I work for?", "what do I do for a living?"]),
        ("Started a new job as a {role} at {company} in {month}",
         ["when did I start my new job?", "what's my new job?"],
         ["what's my new position?", "when did I switch employers?"]),
    ]),
    "move": ("identity", "home city", [
        ("Moved to {city} in {month}", ["when did I move?", "where did I move to?"],
         ["which city did I move to?", "where did I relocate to?"]),
        ("Lives in {city}, near the old harbour", ["which city do I live in?", "where do I live?"],
         ["what town do I live in?", "where is home for me these days?"]),
    ]),
    "allergy": ("identity", "allergy", [
        ("Is allergic to {allergen}", ["what am I allergic to?", "do I have any allergies?"],
         ["what triggers my allergic reactions?", "is there anything I can't eat?"]),
        ("Has a severe {allergen} allergy and carries an EpiPen",
         ["what allergy do I have?", "why do I carry an EpiPen?"],
         ["what do I carry an auto-injector for?", "what makes me sick?"]),
    ]),
    "sibling": ("relationship", "sibling", [
        ("Has a younger sister named {sib} who studies {subject}",
         ["what's my sister's name?", "what does my sister study?"],
         ["what does my younger sibling do at uni?", "what is my sibling called?"]),
        ("Their brother {sib} is a {role} in {city}",
         ["what does my brother do?", "where does my brother work as a {role}?"],
         ["what does {sib} do for work?", "what's my sibling's job?"]),
    ]),
    "instrument": ("other", "instrument", [
        ("Plays the {instrument} in a community orchestra",
         ["which instrument do I play?", "what do I play in the orchestra?"],
         ["what do I play in my ensemble?", "what am I in an ensemble for?"]),
        ("Has been learning the {instrument} for two years",
         ["what instrument am I learning?", "how long have I been learning?"],
         ["what have I been studying for two years?", "what am I practising these days?"]),
    ]),
    "trip": ("plan", None, [
        ("Is planning a trip to {country} in {month}", ["where am I planning a trip?", "when is my trip?"],
         ["where am I going on my planned holiday?", "what vacation do I have coming up?"]),
        ("Ran the {city} marathon in {month}", ["which marathon did I run?", "when did I run the marathon?"],
         ["which race did I run?", "where did I do that 42k?"]),
    ]),
    "birthday": ("identity", "birthday", [
        ("Birthday is on {month} {day}", ["when is my birthday?", "what day is my birthday?"],
         ["what's my birth date?", "when should you wish me happy returns?"]),
        ("Turns {age} on {month} {day}", ["when do I turn {age}?", "how old do I turn this year?"],
         ["what age do I turn next?", "what's my age?"]),
    ]),
    "diet": ("preference", "diet", [
        ("Has been vegetarian since {year}", ["how long have I been vegetarian?", "am I vegetarian?"],
         ["since when have I avoided meat?", "do I eat meat?"]),
        ("Doesn't eat pork or shellfish", ["what don't I eat?", "do I eat shellfish?"],
         ["what meat don't I eat?", "can I have prawns?"]),
    ]),
    "language": ("skill/work", "language", [
        ("Is learning {language} at evening classes",
         ["what language am I learning?", "which evening classes do I take?"],
         ["which classes am I taking?", "what tongue am I studying?"]),
        ("Speaks {language} with their grandmother", ["what language do I speak with my grandmother?",
                                                      "which languages do I speak?"],
         ["what do I speak with grandma?", "how do I talk to my grandma?"]),
    ]),
    "commute": ("other", "commute", [
        ("Drives a {colour} {car}", ["what car do I drive?", "what do I drive?"],
         ["what vehicle do I drive?", "what's parked in my garage?"]),
        ("Commutes by bike every day", ["how do I commute?", "do I bike to work?"],
         ["do I ride my bike to the office?", "how do I get around?"]),
    ]),
    "book": ("preference", "favourite book", [
        ("Favourite book is {book}", ["what's my favourite book?", "which book is my favourite?"],
         ["which novel is my favourite?", "what do I like reading best?"]),
        ("Is rereading {book} for the third time", ["what book am I rereading?", "which book have I read three times?"],
         ["what am I reading for the third time?", "what novel do I keep going back to?"]),
    ]),
}

# Facts anyone may have, many sharing words with the kinds above (distractors); the two global
# ones are what promotion lets follow a user everywhere (level `global`).
BACKGROUND = _pool("""Named their houseplant {plant}|Adopted a new morning routine in {month}|Walks the neighbour's
dog on Sundays|Works out at the gym three times a week|Their partner works at {company}|Started a pottery class in
{month}|Moved their desk next to the window|Lives with two flatmates|Is afraid of thunder|Hates pollen season|
Their cousin studies {subject} in {city}|Plays {game} most evenings|Went to an orchestra concert in {month}|
Is learning to cook Thai food|Took a trip to {city} last year|Runs 5k every morning|Their mum's birthday is in
{month}|Tried a vegan bakery in {city}|Drives their kids to school on Mondays|Reads a book a week|Is planning to
repaint the kitchen|Favourite film is {film}|Has a {colour} bike|Their grandmother lives in {city}|Is scared of
spiders|Used to live in {city}|Wants to adopt a cat someday|Started running in {month}|Has a brother who plays
{game}|Name of their band is The {colour} Foxes|Is studying for a driving test|Their sister works as a {role}|
Speaks a little {language}|Volunteers at an animal shelter on Saturdays|Is saving for a trip to {country}|
Their dad is a retired {role}|Bakes bread every weekend|Supports the local football team|Has two kids|Wears glasses""")
GLOBAL = ("Favourite game is {game}", "Favourite band is {band}")

DAILY = _pool("""Talked about {topic} and {topic2}.|Asked the others about {topic}.|Shared a photo of {thing} and
joked about {topic}.|Complained about {topic}; later chatted about {topic2}.|Recommended something to someone asking
about {topic}.|Was mostly quiet; reacted to a thread about {topic}.|Planned a {game} session for the weekend.|Said
they were tired after {topic}.|Argued that {game} is better than {game2}.|Posted a link about {topic}.|Helped someone
with {topic}.|Celebrated finishing {topic}.|Mentioned {topic} in passing.|Asked for tips on {topic2}.""")
HISTORY_OPEN = _pool("Over the past week:|This week:|In recent days:|Lately:")
