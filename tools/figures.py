"""What the figure scripts in tools/ share: matplotlib without a display, and a figure
saved as PNG and SVG side by side."""
import sys


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed); when matplotlib is missing,
    says in one line how to get it and exits with status 2."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing: apt-get install python3-matplotlib (or bash tools/setup.sh, which installs it)",
              file=sys.stderr)
        sys.exit(2)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path):
    """Lays `fig` out, writes PATH.png and PATH.svg, and closes it."""
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{path}.{ext}")
    pyplot().close(fig)
