"""The bombs of the hostile corpus's analysis cases (tests/meta/hostile/bomb_analysis_*), made at test time: a line
`# __BOMB__ KIND` in a case is replaced by that kind's code, too large and too regular to keep in the repository."""

import base64
import bz2

STATEMENT = "_z = matmul_flops(_z, _z, _z) * 2 + linear_flops(_z, _z, _z)\n"


def decompression() -> str:
    """Twelve literals of about 9 kB, each base64 of a bz2 stream that expands to 33 MB of comment lines."""
    bomb = base64.b64encode(bz2.compress(b"# a comment line like any other, repeated\n" * 800_000)).decode()
    return "".join(f"_BOMB_{i} = {bomb!r}\n" for i in range(12))


def tokens() -> str:
    """Twelve literals, each base64 of a bz2 stream that expands to megabytes of tiny statements: a flood of tokens
    for whatever decodes and reads them as code."""
    bomb = base64.b64encode(bz2.compress(b"".join(b"_a%d = _b + _c * _d\n" % (i % 97) for i in range(400_000))))
    return "".join(f"_FLOOD_{i} = {bomb.decode()!r}\n" for i in range(12))


def nesting() -> str:
    """Statements nested as deep as the parser takes them, and an expression deeper than it can build."""
    ifs = "".join(" " * i + f"if _X > {i}:\n" for i in range(95)) + " " * 95 + "_Y = 1\n"
    return "_X = " + " + ".join(["1"] * 30_000) + "\n" + ifs


def size(stub: str) -> str:
    """One statement repeated until the module is just under the copy check's bound: every statement alike."""
    from grader.copycheck import MAX_BYTES

    return "_z = 1\n" + STATEMENT * ((MAX_BYTES - 5_000 - len(stub)) // len(STATEMENT))


def case(stub: str, attack: str) -> str:
    """The stub with the case `attack` appended, its bomb made."""
    lines = []
    for line in attack.splitlines(keepends=True):
        if line.startswith("# __BOMB__ "):
            kind = line.split()[-1]
            lines.append(size(stub) if kind == "size" else {"decompression": decompression, "tokens": tokens,
                                                              "nesting": nesting}[kind]())
        else:
            lines.append(line)
    return stub + "\n\n# -- the attack --\n" + "".join(lines)
