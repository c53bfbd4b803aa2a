# Runs one LiveCodeBench generation against its problem's tests, as LiveCodeBench's
# lcb_runner/evaluation/testing_util.py grades it (at the commit the MLPerf reference pins). Written
# for mlperf's code judge (runtime/src/accuracy/code_judge.rs), which starts it in a process of its
# own, without network, under a wall-clock limit, with one JSON object on stdin:
#   {"code": str, "inputs": [str], "outputs": [str], "fn_name": str or null, "timeout": seconds}
# and reads the stdout line that starts with "mlperf-lcb-results ": {"results": [...]}, one entry per test run, stopping at
# the first failure: true (passed), -2 (wrong answer), -3 (time limit), -4 (error).
import ast
import builtins
import io
import json
import signal
import sys
from decimal import Decimal, InvalidOperation
from types import ModuleType
from unittest.mock import mock_open, patch

PRELUDE_MODULES = ["string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random",
                   "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing"]
PRELUDE = "".join(f"from {m} import *\n" for m in PRELUDE_MODULES) + \
    "".join(f"import {m}\n" for m in PRELUDE_MODULES if m not in ("builtins", "typing")) + "sys.setrecursionlimit(50000)\n"


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def failure(exc):
    return -3 if isinstance(exc, Timeout) else -4


def load(source):
    module = ModuleType("solution")
    exec(compile(source, "<solution>", "exec"), module.__dict__)
    return module


def stdin_program(code):
    """The program as one function: a trailing `if __name__ == '__main__':` unwrapped, imports kept
    at the top, every other statement in `wrapped_function()`."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    body = tree.body
    if body and isinstance(body[-1], ast.If):
        test = body[-1].test
        if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__":
            body = body[:-1] + body[-1].body
    imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
    rest = [s for s in body if not isinstance(s, (ast.Import, ast.ImportFrom))] or [ast.Pass()]
    function = ast.FunctionDef(name="wrapped_function", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                               body=rest, decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=imports + [function], type_ignores=[]))
    return PRELUDE + "\n" + ast.unparse(module)


class Stdin:
    def __init__(self, text):
        self.text = text
        self.lines = iter(text.split("\n"))
        self.stream = io.StringIO(text)
        self.buffer = io.BytesIO(text.encode())

    def read(self, *args):
        return self.stream.read(*args)

    def readline(self, *args):
        return next(self.lines)

    def readlines(self, *args):
        return self.text.split("\n")

    def __iter__(self):
        return iter(self.text.split("\n"))


def lines_of(text):
    return [line.strip() for line in text.strip().split("\n")]


def numbers(line):
    try:
        return [Decimal(t) for t in line.split()]
    except (InvalidOperation, ValueError):
        return None


def same_output(got, want):
    got, want = lines_of(got), lines_of(want)
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g == w:
            continue
        gn, wn = numbers(g), numbers(w)
        if gn is None or wn is None or gn != wn:
            return False
    return True


def timed(timeout, call):
    """call() under the alarm: (True, its value), or (False, -3 on time out, -4 on an error)."""
    signal.alarm(timeout)
    try:
        return True, call()
    except BaseException as e:
        return False, failure(e)
    finally:
        signal.alarm(0)


def grade(prepare, run, matches, inputs, outputs, timeout):
    """The program prepared, then each test run and compared until the first failure."""
    ok, program = timed(timeout, prepare)
    if not ok:
        return [program]
    results = []
    for given, wanted in zip(inputs, outputs):
        ok, got = timed(timeout, lambda: run(program, given))
        if not ok:
            return results + [got]
        if not matches(got, wanted):
            return results + [-2]
        results.append(True)
    return results


def run_stdin(function, given):
    """The program's output with `given` as its standard input (and as any file it opens)."""
    captured = io.StringIO()
    with patch("builtins.open", mock_open(read_data=given)), patch("sys.stdin", Stdin(given)), patch("sys.stdout", captured):
        try:
            function()
        except SystemExit:
            pass
    return captured.getvalue()


def grade_stdin(code, inputs, outputs, timeout):
    return grade(lambda: load(stdin_program(code)).wrapped_function, run_stdin, same_output, inputs, outputs, timeout)


def grade_calls(code, inputs, outputs, fn_name, timeout):
    def prepare():
        module = load(PRELUDE + "\n\n" + code)
        return getattr(module.Solution() if "class Solution" in code else module, fn_name)

    def call(function, given):
        got = function(*[json.loads(line) for line in given.split("\n")])
        return list(got) if isinstance(got, tuple) else got

    return grade(prepare, call, lambda got, wanted: got == json.loads(wanted), inputs, outputs, timeout)


def disable_destructive_calls():
    """What LiveCodeBench's reliability guard turns off before running generated code."""
    import os
    import shutil
    import subprocess
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ["kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty", "killpg",
                 "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot", "lchown", "chdir"]:
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    builtins.quit = None
    for name in ["ipdb", "joblib", "resource", "psutil", "tkinter"]:
        sys.modules[name] = None


def main():
    job = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    signal.signal(signal.SIGALRM, on_alarm)
    sys.set_int_max_str_digits(50000)
    disable_destructive_calls()
    code, inputs, outputs, timeout = job["code"], job["inputs"], job["outputs"], int(job["timeout"])
    try:
        if job.get("fn_name"):
            results = grade_calls(code, inputs, outputs, job["fn_name"], timeout)
        else:
            results = grade_stdin(code, inputs, outputs, timeout)
    except BaseException as e:
        results = [failure(e)]
    real_stdout.write("\nmlperf-lcb-results " + json.dumps({"results": results}) + "\n")
    real_stdout.flush()


if __name__ == "__main__":
    main()
