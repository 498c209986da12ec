"""Every phrase of the handout that credits the lecture says what the lecture says.

`CLAIMS` pairs each such phrase (a fragment of one line of handout.md, code spans included) with the lines of
the lecture's transcript summary it rests on, quoted. The first test needs only the handout: every mention of
the lecture, outside code spans (test names), is one of the claims, so a new one cannot be added without its
quote. The second checks the quotes against the transcript, `../shared/lecture.txt` beside the repository (the
course's shared folder; CI clones the repository with it beside), and skips, saying where it looked, only
where that file is absent.
"""

import re

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

HANDOUT = ROOT / "handout.md"
LECTURE = ROOT.parent / "shared" / "lecture.txt"

BF16 = "Use BF16 for parameters, activations, gradients."
FP32_STATE = "Use FP32 for optimizer states"
BYTES = "the instructor gives bytes-per-parameter as a combination (2 + 2 + 4 + 4)"
TRAINING_TIME = "how long to train a 70B-parameter model on 15T tokens using 1024 H100"
RANGE = ("fewer exponent bits → poor dynamic range → instability (overflow/underflow, NaNs)",
         "preserves exponent range closer to FP32")

CLAIMS: list[tuple[str, tuple[str, ...]]] = [
    ("the lecture's `bf16` (bf16 parameters and gradients, fp32 moments", (BF16, FP32_STATE, BYTES)),
    ("the lecture's bytes per parameter", (BYTES,)),
    ("The lecture's `rearrange` example splits a dimension of 8 into `(2 × 4)`, runs a matmul on the structured",
     ("a dimension of size 8 representing (2 × 4) is split into two dims",
      "then you can do a matmul on the structured shape and rearrange back")),
    ("the lecture's examples (its matmul einsum, `...` batching)",
     ("X has dims (seq1, hidden)", "Y has dims (hidden, seq2)", "... represents unspecified batch dims")),
    ("The lecture asks how long 70B parameters on", (TRAINING_TIME,)),
    ('(the lecture\'s "pretty happy" MFU)', ("modern models: MFU around 0.5 is “pretty happy”",)),
    ("(the lecture's question, our 144 days)", (TRAINING_TIME,)),
    ("our ~144 days for the lecture's 70B-on-15T-tokens question", (TRAINING_TIME,)),
    ("`bf16` (the lecture's) | bf16 (2) | bf16 (2) | fp32 (2 × 4) | none | 12", (BF16, FP32_STATE, BYTES)),
    ("(the lecture's question, with its 80 GB per H100 and 2+2+4+4 bytes)",
     ("maximum trainable model size using H100s with AdamW", "H100 has 80 GB HBM", BYTES)),
    ("parameters under the lecture's policy", (BF16, FP32_STATE, BYTES)),
    ("(the lecture: activations grow with the", ("Activations scale with:", "batch size", "number of layers")),
    ("what the lecture's 2+2+4+4 assumes", (BYTES, "Optimizer states often stored in FP32")),
    ("the lecture's 2+2+4+4, and 16 and 16 for the other policies", (BYTES,)),
    ("16, 12 (the lecture's 2 + 2 + 4 + 4)", (BYTES,)),
    ("It is not the lecture's", (BF16,)),
    ("The lecture's points on range are tests",
     (*RANGE, "Mentions FP8 (two versions depending on dynamic range vs resolution)")),
    ("our example of the lecture's point on range", RANGE),
    ("lecture's `bf16` policy the weights and gradients are bf16 (2 + 2) but the moments stay fp32 (4 + 4)",
     (BF16, FP32_STATE, BYTES)),
    ("8 bytes of fp32 moments per bf16 parameter (the lecture's 4 + 4)", (BYTES, FP32_STATE)),
    ("the lecture's example operations (ReLU, GELU, dot, mat-vec, matmul",
     ("ReLU", "GELU", "Dot product", "Matrix-vector product", "Matrix multiplication")),
    ("the lecture's numbers (ReLU 0.25, dot ≈ 0.5, the H100's accelerator intensity ≈ 295, a matmul's intensity "
     "about N/3)", ("intensity ~ 0.25", "intensity ~ 0.5", "Example value given for H100: around ~295 FLOPs per byte",
                    "intensity ~ ~N/3 (roughly)")),
    ('where the lecture says "only slightly better"', ("still memory-bound (intensity only slightly better)",)),
    ("| the lecture's numbers |", ("intensity ~ 0.25", "intensity ~ 0.5", "around ~295 FLOPs per byte")),
    ("the lecture's intensities (ReLU 0.25, dot 0.5, the H100's ~295)",
     ("intensity ~ 0.25", "intensity ~ 0.5", "around ~295 FLOPs per byte")),
]

MENTION = re.compile(r"\blecture\b", re.IGNORECASE)


def _without_code(line: str) -> str:
    return re.sub(r"`[^`]*`", "``", line)


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_every_mention_of_the_lecture_in_the_handout_is_a_claim_with_its_quote():
    lines = HANDOUT.read_text(encoding="utf-8").splitlines()
    unclaimed = []
    for number, line in enumerate(lines, start=1):
        mentions = len(MENTION.findall(_without_code(line)))
        claimed = sum(len(MENTION.findall(_without_code(fragment))) for fragment, _ in CLAIMS if fragment in line)
        if mentions > claimed:
            unclaimed.append(f"handout.md:{number}: {line.strip()}")
    assert not unclaimed, ("phrases crediting the lecture with no quote of it in CLAIMS (add the phrase and the "
                           "lecture's lines it rests on, or credit the figure to us):\n" + "\n".join(unclaimed))
    text = HANDOUT.read_text(encoding="utf-8")
    stale = [fragment for fragment, _ in CLAIMS if fragment not in text]
    assert not stale, f"claims no longer in the handout: {stale}"


def test_every_quote_is_in_the_lecture():
    if not LECTURE.is_file():
        pytest.skip(f"the lecture's transcript is not at {LECTURE} (the course's shared folder beside the "
                    "repository): the quotes are not checked here")
    lecture = _normal(LECTURE.read_text(encoding="utf-8"))
    missing = [(fragment, quote) for fragment, quotes in CLAIMS for quote in quotes if _normal(quote) not in lecture]
    assert not missing, "quotes that are not in the lecture:\n" + "\n".join(f"{f!r}: {q!r}" for f, q in missing)
