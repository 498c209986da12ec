"""The scenarios of the roofline problem: plot_roofline while matplotlib cannot be imported, and the points it
draws. The roofline's
oracles (the FLOPs and bytes of an op, measured with torch on the meta device) are in tests/oracles.py.
"""

import sys


def plot_without_matplotlib(pkg, hw, points: dict, path: str) -> dict:
    """Scenario: plot_roofline while matplotlib cannot be imported; what it raised."""
    hidden = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "matplotlib"}
    for name in hidden:
        sys.modules[name] = None  # an import of a module set to None raises ImportError
    sys.modules["matplotlib"] = None
    try:
        pkg.roofline.plot_roofline(hw, points, path)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # the test decides whether it is the right one
        return {"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "matplotlib"]:
            del sys.modules[name]
        sys.modules.update(hidden)
    return {"raised": [], "message": ""}


def plot_capturing_points(pkg, hw, points: dict, path: str, dtype) -> list[list[float]]:
    """Scenario: plot_roofline, and every data point of the figures it saved: each line's and each collection's
    (a scatter's) points, in data coordinates, however the plot was drawn."""
    import matplotlib.figure

    drawn: list[list[float]] = []
    savefig = matplotlib.figure.Figure.savefig

    def recording_savefig(figure, *args, **kwargs):
        for ax in figure.get_axes():
            for line in ax.get_lines():
                drawn.extend([float(x), float(y)] for x, y in line.get_xydata())
            for collection in ax.collections:
                drawn.extend([float(x), float(y)] for x, y in collection.get_offsets())
        return savefig(figure, *args, **kwargs)

    matplotlib.figure.Figure.savefig = recording_savefig
    try:
        pkg.roofline.plot_roofline(hw, points, path, dtype)
    finally:
        matplotlib.figure.Figure.savefig = savefig
    return drawn
