# Runs one MBXP Python program as mxeval's check_correctness does (written for this tool from
# mxeval e09974f's rules): in an empty directory, with destructive functions disabled, output
# swallowed, input unreadable, under a real-time alarm; passed when it raises nothing.
# Reads {"program", "timeout", "dir"} as JSON on stdin (the caller makes and removes the
# directory: the program runs without the functions that would); prints one verdict line.
import builtins
import contextlib
import faulthandler
import io
import json
import os
import shutil
import signal
import subprocess
import sys

MARKER = "mlperf-mbxp-verdict "


class Timeout(Exception):
    pass


class Unreadable(io.StringIO):
    def read(self, *args, **kwargs):
        raise IOError

    def readline(self, *args, **kwargs):
        raise IOError

    def readlines(self, *args, **kwargs):
        raise IOError

    def readable(self, *args, **kwargs):
        return False


def disable_destructive_calls():
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    builtins.help = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg rename renames truncate replace "
                 "unlink fchmod fchown chmod chown chroot lchflags lchmod lchown getcwd chdir").split():
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    for module in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[module] = None


def main():
    job = json.loads(sys.stdin.read())
    out = sys.stdout
    os.chdir(job["dir"])
    disable_destructive_calls()

    def alarm(signum, frame):
        raise Timeout()

    sink = Unreadable()
    verdict = "passed"
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            sys.stdin = sink
            signal.signal(signal.SIGALRM, alarm)
            signal.setitimer(signal.ITIMER_REAL, job["timeout"])
            try:
                exec(job["program"], {})
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except Timeout:
        verdict = "timed out"
    except BaseException as e:
        verdict = f"failed: {e}"
    out.write(MARKER + json.dumps(verdict) + "\n")
    out.flush()
    # Ends here whatever the program left behind (threads, handlers).
    os._exit(0)


main()
