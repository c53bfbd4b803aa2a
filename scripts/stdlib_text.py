"""English text for the accuracy fixture scripts: the docstrings of the Python
standard library's top-level modules (module, class and function docstrings,
in file order), shared by make_rouge_fixtures.py and make_punkt_fixtures.py."""
import ast
import glob
import os

STDLIB_DIR = os.path.dirname(os.__file__)


def stdlib_files():
    """Top-level *.py files of the standard library, sorted (no site-packages)."""
    return sorted(glob.glob(os.path.join(STDLIB_DIR, "*.py")))


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def docstrings():
    """Every non-empty docstring, file by file, module first."""
    for path in stdlib_files():
        try:
            tree = ast.parse(read_text(path))
        except SyntaxError:
            continue
        nodes = [tree] + [n for n in ast.walk(tree) if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        for node in nodes:
            doc = ast.get_docstring(node)
            if doc:
                yield doc
