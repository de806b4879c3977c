"""pyplot_import.py — matplotlib's pyplot for the plotting scripts (plot_run.py, plot_precision.py).

tools/setup.sh installs Debian's python3-matplotlib, which only /usr/bin/python3 sees: a pyenv or
venv python3 first on PATH does not. So when the python3 running a script cannot import
matplotlib, the script runs itself once more under /usr/bin/python3, and says so on stderr.
Tested by: tests/cli/test_plot.sh (plot_run.py), tests/train/loop/test_bench_precision.sh.
"""
import os
import sys

# Debian's interpreter, which sees python3-matplotlib; FALLBACK_MARK stops a second hand-over.
SYSTEM_PYTHON = "/usr/bin/python3"
FALLBACK_MARK = "FARTHING_PLOT_FALLBACK_FROM"


def import_pyplot(script, fail, who):
    """pyplot with the file-only Agg backend, or no return: `script` (the caller's __file__) is
    re-run under /usr/bin/python3 once, then `fail(message, 3)` names both interpreters."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError as e:
        first = os.environ.get(FALLBACK_MARK)
        if first is None and os.access(SYSTEM_PYTHON, os.X_OK):
            os.environ[FALLBACK_MARK] = sys.executable
            sys.stdout.flush()
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(script), *sys.argv[1:]])
        tried = f"neither {first} nor {sys.executable} can" if first else f"{sys.executable} cannot"
        fail(f"needs matplotlib, which {tried} import ({e}); install it with "
             "`python3 -m pip install matplotlib` (or Debian's python3-matplotlib for /usr/bin/python3: "
             "tools/setup.sh installs it)", 3)
    if os.environ.get(FALLBACK_MARK):
        print(f"{who}: {os.environ[FALLBACK_MARK]} has no matplotlib; drew with {sys.executable}'s", file=sys.stderr)
    return plt
