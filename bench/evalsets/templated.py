"""A generated evaluation set (bench/eval.py): household and team notes written from templates, and
questions written from *other* templates that say the same thing with synonyms and another word order.

Made by a different method from bench/paraphrase (hand-written pairs) and LoCoMo (conversations):
every note line comes from a note template whose slots take a word of a synonym pair (car, garage,
grandmother...), and its question from a question template taking the pair's other word (automobile,
carport, nana...), so the question shares no content word with its line (checked by eval.py with the
keyword matcher recall uses). Each (template, slot values) combination is used once, so every
question has one answer; the other combinations of the same template are its distractors (the same
sentence shape about another relative or vehicle), beside 300 generated daily logs. Deterministic
(seed 25).

Categories:
- reworded: no content word shared with the answering line.
- entity: the same kind of fact about a named person; the question names them and shares nothing else.
- exact: a ticket ID (OPS-4821) the question quotes; the rest reworded.
"""
from __future__ import annotations

import itertools
import random

# (word as the note says it, word as the question says it): different stems, same meaning
RELATIVES = [("grandmother", "nana"), ("uncle", "dad's brother"), ("neighbour", "lady next door"),
             ("sister", "sibling"), ("cousin", "aunt's son"), ("boss", "manager"), ("landlord", "owner of our flat"),
             ("nephew", "brother's boy")]
VEHICLES = [("car", "automobile"), ("bicycle", "bike"), ("motorcycle", "motorbike"), ("van", "minibus"),
            ("scooter", "moped"), ("truck", "lorry")]
PLACES = [("garage", "carport"), ("basement", "cellar"), ("yard", "garden"), ("street", "road"),
          ("shed", "outbuilding"), ("driveway", "front drive")]
ANIMALS = [("cat", "kitten"), ("dog", "puppy"), ("horse", "pony"), ("parrot", "bird"), ("rabbit", "bunny"),
           ("hamster", "rodent")]
MEDS = [("thyroid", "gland"), ("heart", "cardiac"), ("kidney", "renal"), ("joint", "arthritis"), ("skin", "rash")]
FOODS = [("peanuts", "nuts"), ("gluten", "wheat"), ("shellfish", "prawns"), ("dairy", "milk"), ("eggs", "omelettes")]
DEVICES = [("laptop", "notebook computer"), ("phone", "mobile"), ("tablet", "iPad"), ("camera", "DSLR"),
           ("headphones", "earbuds")]
INSTRUMENTS = [("cello", "string instrument played sitting down"), ("drums", "percussion kit"),
               ("trumpet", "brass horn"), ("piano", "keyboard instrument"), ("flute", "woodwind")]
SPORTS = [("half marathon", "21 km race"), ("swimming gala", "pool competition"), ("chess tournament", "board game contest"),
          ("cycling race", "road biking event"), ("tennis final", "racket championship")]
CITIES = [("Tokyo", "Japan"), ("Lisbon", "Portugal"), ("Toronto", "Canada"), ("Nairobi", "Kenya"), ("Lima", "Peru"),
          ("Oslo", "Norway")]
NAMES = ["Amara", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kenji", "Leila",
         "Mateo", "Nadia", "Oskar", "Priti", "Quentin", "Rosa", "Samir", "Tove"]
ISSUES = [("disk filled up", "storage ran out"), ("certificate expired", "TLS cert lapsed"),
          ("memory leak", "RAM kept growing"), ("backup failed", "nightly copy broke"),
          ("login broken", "sign-in stopped working"), ("queue stalled", "jobs stopped moving")]
HOSTS = ["atlas", "borealis", "cobalt", "dynamo", "ember", "fjord"]

# note template, question template, the slot lists (each slot an index into the note/question pair)
TEMPLATES = [
    ("- My {0} leaves the {1} in the {2} overnight.", "Where does my {0} keep the {1} at night?",
     (RELATIVES, VEHICLES, PLACES), 2),
    ("- The {1} of my {0} takes a {2} pill with breakfast.", "What medication does my {0}'s {1} need in the morning?",
     (RELATIVES, ANIMALS, MEDS), 2),
    ("- My {0} cannot eat {1}: keep them off the menu when hosting.", "Is my {0} allergic to {1}?",
     (RELATIVES, FOODS), 1),
    ("- My {0}'s {1} battery drains fast; a replacement arrives Thursday.", "When does my {0} get a new power cell for the {1}?",
     (RELATIVES, DEVICES), 1),
    ("- My {0} started lessons on the {1} this spring.", "Which {1} is my {0} practising?",
     (RELATIVES, INSTRUMENTS), 1),
    ("- My {0} finished the {1} in second place.", "How did my {0} do in the {1}?", (RELATIVES, SPORTS), 1),
    ("- My {0} flies to {1} on the 14th for a conference.", "When is my {0} travelling to {1}?", (RELATIVES, CITIES), 1),
]
# the same facts about a named person: the question names them and rewords the rest
NAMED = [
    ("- {n} leaves the {1} in the {2} overnight.", "Where does {n} keep the {1} at night?", (VEHICLES, PLACES)),
    ("- {n} cannot eat {1}: keep them off the menu when hosting.", "Is {n} allergic to {1}?", (FOODS,)),
    ("- {n} flies to {1} on the 14th for a conference.", "When is {n} travelling to {1}?", (CITIES,)),
    ("- {n} started lessons on the {1} this spring.", "Which {1} is {n} practising?", (INSTRUMENTS,)),
]
EXACT = ("- Ticket {id}: the {issue} on {host}; fixed by rotating the volume.", "What went wrong in {id}?")


def generate(seed: int = 25) -> tuple[dict[str, str], list[dict]]:
    """({path: text}, questions) with questions as {id, category, question, path, line, lang}."""
    r = random.Random(seed)
    facts: list[tuple[str, str, str]] = []  # (line, question, category)
    for t, (note, question, slots, _) in enumerate(TEMPLATES):
        combos = list(itertools.product(*[range(len(s)) for s in slots]))
        r.shuffle(combos)
        # one combination per relative at most in the questions' first slot pair: a question is unique when its
        # (relative, second slot) pair is (the third slot is the answer)
        seen = set()
        for c in combos:
            key = c[:2]
            if key in seen:
                continue
            seen.add(key)
            nv = [slots[i][v][0] for i, v in enumerate(c)]
            qv = [slots[i][v][1] for i, v in enumerate(c)]
            facts.append((note.format(*nv), question.format(*qv), "reworded"))
    names = list(NAMES)
    for note, question, slots in NAMED:
        r.shuffle(names)
        for n in names[:8]:
            c = [r.randrange(len(s)) for s in slots]
            nv = [None] + [s[v][0] for s, v in zip(slots, c)]
            qv = [None] + [s[v][1] for s, v in zip(slots, c)]
            facts.append((note.format(*nv, n=n), question.format(*qv, n=n), "entity"))
    for i in range(30):
        tid = f"OPS-{r.randrange(1000, 9999)}"
        issue = r.choice(ISSUES)
        facts.append((EXACT[0].format(id=tid, issue=issue[0], host=r.choice(HOSTS)),
                      EXACT[1].format(id=tid), "exact"))
    r.shuffle(facts)
    files: dict[str, str] = {}
    questions: list[dict] = []
    per_day = 6
    filler = ["- Watered the plants and sorted the post.", "- Long call about the holiday plans; nothing decided.",
              "- Paid the electricity bill.", "- Cleaned out the fridge."]
    for d in range(0, len(facts), per_day):
        day = f"2024-{1 + (d // per_day) // 28:02d}-{1 + (d // per_day) % 28:02d}"
        path = f"memory/{day}.md"
        lines = [f"# {day}", "", "## Notes", ""]
        for line, question, category in facts[d:d + per_day]:
            lines.append(line)
            questions.append({"id": f"tpl{len(questions) + 1:03d}", "category": category, "question": question,
                              "path": path, "line": len(lines), "lang": "en"})
            if r.random() < 0.5:
                lines.append(r.choice(filler))
        files[path] = "\n".join(lines) + "\n"
    return files, questions


# The same method in Portuguese and Spanish (set "templated-ml" of bench/eval.py): note and question templates
# of each language, synonym pairs with different stems; articles travel with the words they belong to.
ML = {
    "pt": {
        "rel": [("A minha avó", "a minha vovó"), ("O meu tio", "o irmão do meu pai"), ("A minha vizinha", "a senhora do lado"),
                ("O meu chefe", "o meu gerente"), ("O meu primo", "o filho da minha tia"), ("A minha sogra", "a mãe da minha mulher")],
        "veh": [("o carro", "o automóvel"), ("a bicicleta", "a bike"), ("a mota", "a motocicleta"), ("a carrinha", "o furgão"),
                ("a trotinete", "o patinete")],
        "place": [("na garagem", "no box"), ("na cave", "no porão"), ("no quintal", "no jardim"), ("na rua", "na estrada")],
        "food": [("marisco", "camarões"), ("glúten", "trigo"), ("lacticínios", "leite"), ("ovos", "omeletes"),
                 ("amendoins", "frutos secos")],
        "templates": [("- {rel} deixa {veh} {place} até de manhã.", "Onde é que {rel_q} guarda {veh_q} à noite?",
                       ("rel", "veh", "place")),
                      ("- {rel} não pode comer {food}; nada disso nos jantares.", "Será que {rel_q} é alérgica a {food_q}?",
                       ("rel", "food"))],
    },
    "es": {
        "rel": [("Mi abuela", "mi yaya"), ("Mi tío", "el hermano de mi padre"), ("Mi vecina", "la señora de al lado"),
                ("Mi jefe", "mi gerente"), ("Mi primo", "el hijo de mi tía"), ("Mi suegra", "la madre de mi mujer")],
        "veh": [("el coche", "el automóvil"), ("la furgoneta", "la camioneta"), ("el patinete", "el monopatín"),
                ("el camión", "el tráiler"), ("la moto", "el ciclomotor")],
        "place": [("en el garaje", "en la cochera"), ("en el sótano", "en la bodega"), ("en el patio", "en el jardín"),
                  ("en la calle", "en la acera")],
        "food": [("mariscos", "gambas"), ("gluten", "trigo"), ("lácteos", "leche"), ("huevos", "tortillas"),
                 ("cacahuetes", "frutos secos")],
        "templates": [("- {rel} deja {veh} {place} hasta la mañana.", "¿Dónde guarda {rel_q} {veh_q} por la noche?",
                       ("rel", "veh", "place")),
                      ("- {rel} no puede comer {food}; nada de eso en las cenas.", "¿Es {rel_q} alérgica a {food_q}?",
                       ("rel", "food"))],
    },
}


# The same method in Chinese (set "templated-zh", written in session 14 after the fusion was tuned: a probe it
# never saw). The question's words share no CJK bigram with the note's (奶奶 / 祖母, 汽车 / 座驾), so keyword
# recall matches at most the template's incidental words.
ML_ZH = {
    "zh": {
        "heading": "笔记",
        "rel": [("我奶奶", "我祖母"), ("我叔叔", "我爸爸的弟弟"), ("我邻居", "隔壁那位阿姨"), ("我老板", "我的经理"),
                ("我表哥", "我姑妈的儿子"), ("我婆婆", "我丈夫的母亲")],
        "veh": [("汽车", "座驾"), ("自行车", "单车"), ("摩托车", "机车"), ("面包车", "小货车"), ("滑板车", "踏板车")],
        "place": [("停在车库里", "放在停车棚"), ("锁在地下室", "放在地窖"), ("停在院子里", "放在花园"),
                  ("停在街上", "放在马路边")],
        "food": [("海鲜", "虾蟹"), ("麸质", "小麦"), ("奶制品", "牛奶"), ("鸡蛋", "煎蛋卷"), ("花生", "坚果")],
        "templates": [("- {rel}把{veh}{place}，一直到第二天早上。", "{rel_q}晚上把{veh_q}放哪儿？", ("rel", "veh", "place")),
                      ("- {rel}不能吃{food}，晚饭里一点都不能有。", "{rel_q}对{food_q}过敏吗？", ("rel", "food"))],
    },
}


def generate_ml(seed: int = 26, lexicon: dict | None = None, prefix: str = "ml") -> tuple[dict[str, str], list[dict]]:
    """({path: text}, questions) for the templates of other languages (default ML: Portuguese and Spanish;
    ML_ZH: Chinese); categories reworded/<lang>, ids <prefix>001..."""
    r = random.Random(seed)
    facts: list[tuple[str, str, str]] = []
    lexicon = ML if lexicon is None else lexicon
    for lang, lex in lexicon.items():
        for note, question, slots in lex["templates"]:
            combos = list(itertools.product(*[range(len(lex[s])) for s in slots]))
            r.shuffle(combos)
            seen = set()
            for c in combos:
                if c[:2] in seen:
                    continue
                seen.add(c[:2])
                nv = {s: lex[s][v][0] for s, v in zip(slots, c)}
                qv = {f"{s}_q": lex[s][v][1] for s, v in zip(slots, c)}
                facts.append((note.format(**nv), question.format(**qv), lang))
    r.shuffle(facts)
    files: dict[str, str] = {}
    questions: list[dict] = []
    for d in range(0, len(facts), 6):
        day = f"2024-{1 + (d // 6) // 28:02d}-{1 + (d // 6) % 28:02d}"
        path = f"memory/{day}.md"
        heading = lexicon[facts[d][2]].get("heading", "Notas")
        lines = [f"# {day}", "", f"## {heading}", ""]
        for line, question, lang in facts[d:d + 6]:
            lines.append(line)
            questions.append({"id": f"{prefix}{len(questions) + 1:03d}", "category": f"reworded/{lang}", "question": question,
                              "path": path, "line": len(lines), "lang": lang})
        files[path] = "\n".join(lines) + "\n"
    return files, questions


# Questions no note answers, made by the same method (set "noanswer-tpl" of bench/eval.py): the question templates
# above with slot words no note of the templated or paraphrase workspace holds (checked against their indexes when
# written: none is in any chunk, but for incidental stems: `rowing` matches `rows`, `casa` two notes), so a question has the shape and the incidental words (keep, night,
# allergic, morning, travelling) of the answerable ones but asks about a relative, a thing or a place no note names.
ABSENT = {
    "rel": ["godfather", "stepdaughter", "great-aunt", "flatmate", "goddaughter", "father-in-law"],
    "veh": ["canoe", "tractor", "caravan", "kayak", "snowmobile", "rickshaw"],
    "animal": ["tortoise", "ferret", "goldfish", "iguana", "alpaca", "gecko"],
    "food": ["kiwis", "sesame", "mustard", "celery", "lupins", "radishes"],
    "device": ["drone", "e-reader", "smartwatch", "metronome", "walkie-talkie"],
    "instrument": ["harp", "bagpipes", "accordion", "ukulele", "banjo", "oboe"],
    "sport": ["fencing bout", "rowing regatta", "archery contest", "darts league", "judo grading"],
    "city": ["Reykjavik", "Ulaanbaatar", "Kathmandu", "Hobart", "Tbilisi", "Montevideo"],
}
ABSENT_EN = [("Where does my {rel} keep the {veh} at night?", ("rel", "veh")),
             ("What medication does my {rel}'s {animal} need in the morning?", ("rel", "animal")),
             ("Is my {rel} allergic to {food}?", ("rel", "food")),
             ("When does my {rel} get a new power cell for the {device}?", ("rel", "device")),
             ("Which {instrument} is my {rel} practising?", ("rel", "instrument")),
             ("How did my {rel} do in the {sport}?", ("rel", "sport")),
             ("When is my {rel} travelling to {city}?", ("rel", "city"))]
ABSENT_ML = {
    "pt": ([("o meu padrinho", "a minha enteada", "o meu colega de casa", "a minha afilhada"),
            ("a canoa", "o trator", "a caravana", "o caiaque")],
           [("aipo", "sésamo", "mostarda", "rabanetes")],
           "Onde é que {rel} guarda {veh} à noite?", "Será que {rel} é alérgico a {food}?"),
    "es": ([("mi padrino", "mi hijastra", "mi compañero de piso", "mi ahijada"),
            ("la canoa", "el tractor", "la caravana", "el kayak")],
           [("apio", "sésamo", "mostaza", "rábanos")],
           "¿Dónde guarda {rel} {veh} por la noche?", "¿Es {rel} alérgico a {food}?"),
    # session 14, with templated-zh (also asked of its workspace, whose notes have these questions' shape)
    "zh": ([("我教父", "我继女", "我室友", "我教女"), ("独木舟", "拖拉机", "房车", "皮划艇")],
           [("芹菜", "芝麻", "芥末", "萝卜")],
           "{rel}晚上把{veh}放哪儿？", "{rel}对{food}过敏吗？"),
}


def generate_noanswer(seed: int = 27) -> list[dict]:
    """Questions as {id, category, question, lang} (categories en, pt, es, zh): 6 per English template, 4 per
    Portuguese, Spanish or Chinese one, each (relative, thing) pair drawn once."""
    r = random.Random(seed)
    out: list[dict] = []
    for question, slots in ABSENT_EN:
        combos = list(itertools.product(*[range(len(ABSENT[s])) for s in slots]))
        r.shuffle(combos)
        for c in combos[:6]:
            out.append({"question": question.format(**{s: ABSENT[s][v] for s, v in zip(slots, c)}), "lang": "en"})
    for lang, ((rels, vehs), (foods,), keep, allergic) in ABSENT_ML.items():
        pairs = list(itertools.product(range(4), range(4)))
        r.shuffle(pairs)
        out += [{"question": keep.format(rel=rels[a], veh=vehs[b]), "lang": lang} for a, b in pairs[:4]]
        out += [{"question": allergic.format(rel=rels[a], food=foods[b]), "lang": lang} for a, b in pairs[4:8]]
    for i, q in enumerate(out, 1):
        q.update(id=f"nt{i:03d}", category=q["lang"])
    return out
