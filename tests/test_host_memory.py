"""The numpy backend asks glibc to keep freed memory; it can be turned off, and is harmless elsewhere."""

import subprocess
import sys


def _run(code, **env):
    import os

    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment).stdout.strip()


def test_opting_out_leaves_malloc_alone():
    code = "from gradlab.backends.host_memory import keep_freed_memory; print(keep_freed_memory())"
    assert _run(code, GRADLAB_KEEP_FREED_MEMORY="0") == "False"


def test_keeping_freed_memory_reports_whether_it_took_effect():
    code = "from gradlab.backends.host_memory import keep_freed_memory; print(keep_freed_memory())"
    on_glibc = sys.platform.startswith("linux")
    assert _run(code) == ("True" if on_glibc else "False") or not on_glibc


def test_the_choice_is_made_once_when_the_cpu_backend_loads():
    code = ("from gradlab.backends import host_memory; before = host_memory.kept; import gradlab; gradlab.zeros(1); "
            "print(before, host_memory.kept)")
    on_glibc = sys.platform.startswith("linux")
    assert _run(code, GRADLAB_KEEP_FREED_MEMORY="0") == "None False"
    assert _run(code) == ("None True" if on_glibc else "None False")
