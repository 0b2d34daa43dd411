"""A built-in story corpus: short children's stories from a seeded grammar.

The demo must run without the internet, so the project writes its own TinyStories-like text. Each
story follows a small plot (a character, a place, a wish, a problem, a helper, an ending) filled from
word lists with agreement kept consistent (names, pronouns, the lost object), so a model has
something to learn beyond word frequencies: who the story is about, which object went missing, and
how stories start and end. Stories are separated by ``<|endoftext|>``. The same seed always gives
the same text.
"""

from __future__ import annotations

import random
from pathlib import Path

from seqlab.atomic import atomic_path

END_OF_TEXT = "<|endoftext|>"

GIRL_NAMES = ["Lily", "Mia", "Sue", "Anna", "Lucy", "Emma", "Zoe", "Ella", "Rose", "Amy", "Kate", "Nora"]
BOY_NAMES = ["Tom", "Ben", "Sam", "Max", "Leo", "Tim", "Jack", "Finn", "Joe", "Noah", "Owen", "Luke"]
ANIMALS = ["cat", "dog", "bunny", "bird", "fox", "bear", "duck", "frog", "mouse", "owl", "pig", "lamb"]
ANIMAL_NAMES = ["Spot", "Fluffy", "Pip", "Coco", "Bubbles", "Buddy", "Daisy", "Nibbles", "Sunny", "Patch"]
PLACES = [
    ("a small house", "near the woods"), ("a big farm", "with a red barn"),
    ("a little town", "by the sea"), ("a cozy nest", "high in a tree"),
    ("a green park", "full of flowers"), ("a quiet village", "at the foot of a hill"),
]
OBJECTS = ["ball", "kite", "hat", "book", "toy car", "teddy bear", "red box", "shiny stone",
           "blue cup", "little boat", "drum", "key"]
ADJECTIVES = ["happy", "curious", "kind", "brave", "shy", "silly", "gentle", "clever", "sleepy", "cheerful"]
FEELINGS_BAD = ["sad", "worried", "upset", "scared", "lonely"]
FEELINGS_GOOD = ["happy", "glad", "proud", "excited", "thankful"]
SEARCH_PLACES = ["under the bed", "behind the tree", "in the tall grass", "near the pond",
                 "inside an old box", "on top of the hill", "under a big rock", "by the garden gate"]
HELPERS = [("mom", "her"), ("dad", "his"), ("grandma", "her"), ("friend", "the"), ("teacher", "the")]
WEATHER = ["sunny", "windy", "rainy", "snowy", "warm", "cold"]
GAMES = ["play tag", "build a sand castle", "jump in puddles", "draw pictures", "sing songs",
         "look at the clouds", "pick flowers", "read a book"]
MORALS = [
    "It is good to share with friends.",
    "Asking for help is a brave thing to do.",
    "Being kind makes everyone happy.",
    "If you keep trying, you can do it.",
    "Friends help each other when things are hard.",
    "It is important to be careful with your things.",
]


class _Character:
    def __init__(self, rng: random.Random):
        kind = rng.random()
        self.adjective = rng.choice(ADJECTIVES)
        if kind < 0.4:
            self.name, self.he, self.him, self.his = rng.choice(GIRL_NAMES), "she", "her", "her"
            self.intro = f"a little girl named {self.name}"
        elif kind < 0.8:
            self.name, self.he, self.him, self.his = rng.choice(BOY_NAMES), "he", "him", "his"
            self.intro = f"a little boy named {self.name}"
        else:
            animal = rng.choice(ANIMALS)
            self.name = rng.choice(ANIMAL_NAMES)
            self.he, self.him, self.his = ("she", "her", "her") if rng.random() < 0.5 else ("he", "him", "his")
            self.intro = f"a {self.adjective} {animal} named {self.name}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def story(rng: random.Random) -> str:
    """One story as plain text (several sentences, no end-of-text marker)."""
    hero = _Character(rng)
    friend = _Character(rng)
    while friend.name == hero.name:
        friend = _Character(rng)
    home, detail = rng.choice(PLACES)
    thing = rng.choice(OBJECTS)
    spot = rng.choice(SEARCH_PLACES)
    sad, glad = rng.choice(FEELINGS_BAD), rng.choice(FEELINGS_GOOD)
    opening = rng.choice(["Once upon a time", "One day", "Long ago", "Once"])
    he, his, name = hero.he, hero.his, hero.name

    lines = [f"{opening}, there was {hero.intro}."]
    lines.append(f"{_cap(he)} lived in {home} {detail}.")
    lines.append(rng.choice([
        f"{name} had a {thing} that {he} loved very much.",
        f"{name} loved {his} {thing} more than anything.",
        f"Every day, {name} played with {his} {thing}.",
    ]))
    weather = rng.choice(WEATHER)
    lines.append(f"One {weather} morning, {name} wanted to {rng.choice(GAMES)} with {friend.name}.")
    lines.append(rng.choice([
        f"But when {he} looked for {his} {thing}, it was gone!",
        f"But {his} {thing} was not in its place.",
        f"But then {name} could not find {his} {thing}.",
    ]))
    lines.append(f"{name} felt {sad}.")
    quote = rng.choice([f"Where is my {thing}?", f"I miss my {thing}.", f"I lost my {thing}!"])
    lines.append(f"\"{quote}\" {he} said.")
    if rng.random() < 0.5:
        helper, helper_his = rng.choice(HELPERS)
        who = f"{his} {helper}" if helper_his != "the" else f"{his} {helper} {friend.name}"
        lines.append(f"{_cap(who)} saw that {name} was {sad}.")
        lines.append(f"\"Let us look together,\" said {who}.")
    else:
        lines.append(f"{friend.name} came to help.")
        lines.append(f"\"Do not be {sad}, {name}. I will help you,\" said {friend.name}.")
    tries = rng.sample([place for place in SEARCH_PLACES if place != spot], 2)
    lines.append(f"They looked {tries[0]}, but the {thing} was not there.")
    if rng.random() < 0.5:
        lines.append(f"They looked {tries[1]}, but it was not there either.")
    lines.append(f"At last, they found the {thing} {spot}!")
    lines.append(f"{name} was so {glad}.")
    lines.append(rng.choice([
        f"{_cap(he)} hugged {friend.name} and said, \"Thank you!\"",
        f"\"Thank you for helping me,\" {name} said with a big smile.",
        f"{_cap(he)} gave {friend.name} a big hug.",
    ]))
    lines.append(rng.choice([
        f"Then they played with the {thing} all day.",
        f"From that day on, {name} kept {his} {thing} in a safe place.",
        f"They had lots of fun until the sun went down.",
    ]))
    if rng.random() < 0.5:
        lines.append(rng.choice(MORALS))
    return " ".join(lines)


def generate_stories(num_stories: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [story(rng) for _ in range(num_stories)]


def write_corpus(path: str | Path, num_stories: int, seed: int = 0) -> Path:
    """Write ``num_stories`` stories separated by ``<|endoftext|>`` lines (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for text in generate_stories(num_stories, seed):
            fh.write(text)
            fh.write(f"\n{END_OF_TEXT}\n")
    return path


def write_demo_corpus(directory: str | Path, train_stories: int = 20000, valid_stories: int = 1000,
                      seed: int = 0) -> tuple[Path, Path]:
    """Train and validation files from disjoint seeds (valid stories are new draws, not copies)."""
    directory = Path(directory)
    train = write_corpus(directory / "stories_train.txt", train_stories, seed)
    valid = write_corpus(directory / "stories_valid.txt", valid_stories, seed + 1_000_003)
    return train, valid
