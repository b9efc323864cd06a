"""Every CLI value is checked for type and range before a model loads: one line on stderr, exit status 2."""
import subprocess
import sys

import pytest

from explorer.cli import main

MODEL = ["--model", "shakespeare-gqa"]
TRACE = ["trace", *MODEL, "--prompt", "To be", "--out", "never-written.npz"]
EXPORT = ["export", *MODEL, "--prompt", "To be", "-o", "never-written.png"]


@pytest.mark.parametrize("argv, words", [
    (TRACE + ["--temperature", "nan"], "sampling temperature=nan is not legal"),
    (TRACE + ["--sampling-temperature", "-0.5"], "temperature=-0.5 is not legal"),
    (TRACE + ["--temperature", "inf"], "temperature=inf is not legal"),
    (TRACE + ["--seed", "-1", "--temperature", "0.8"], "sampling seed=-1 is not legal"),
    (TRACE + ["--seed", str(2**64)], f"seed={2**64}"),
    (TRACE + ["--device", "meta"], "'meta' is not a device"),
    (TRACE + ["--steps", "-3"], "--steps: -3 is not between 0"),
    (TRACE + ["--steps", "1e3"], "'1e3' is not a whole number"),
    (TRACE + ["--top-p", "0"], "sampling top_p=0 is not legal"),
    (TRACE + ["--top-k", "-1"], "sampling top_k=-1"),
    (TRACE + ["--top-k", "2.5"], "sampling top_k=2.5"),
    (TRACE + ["--temperature", "warm"], "--temperature: 'warm' is not a number"),
    (["kv", *MODEL, "--tokens", str(10**30)], "--tokens"),
    (["kv", *MODEL, "--tokens", "0"], "--tokens: 0 is not between 1"),
    (EXPORT + ["--size", "30000x30000"], "30000x30000 pixels is too large"),
    (EXPORT + ["--size", "16000x16000"], "at most 40,000,000 pixels"),
    (EXPORT + ["--size", "20000x100"], "each side may be at most 16,384 pixels"),
    (EXPORT + ["--size", "16385x100"], "16385x100 pixels is too large: each side may be at most 16,384 pixels"),
    (TRACE + ["--temperature", "1e400"], "--temperature: 1e400 is past the largest number a float holds"),
    (["bench", *MODEL, "--steps", "0"], "--steps: 0 is not between 1"),
    (EXPORT + ["--size", "10x800"], "each side must be at least 16"),
    (EXPORT + ["--size", "99999999999999x2"], "must look like 1000x800"),
    (EXPORT + ["--at-step", "-1"], "--at-step"),
    (EXPORT + ["--dtype", "int4"], "--dtype"),
    (["heads", *MODEL, "--seed", "-5"], "--seed"),
    (["attribute", *MODEL, "--prompt", "x", "--position", "-2"], "--position"),
    (["bench", *MODEL, "--steps", "nan"], "--steps"),
    (["train", "--lr", "nan"], "--lr: nan is not a finite number"),
    (["train", "--batch-size", "0"], "--batch-size"),
    # boundary27: an empty --kernel-layers passed without --kernel, and an empty --model named the bundled folder
    (TRACE + ["--kernel-layers", ""], "--kernel-layers needs --kernel"),
    (["trace", "--model", "", "--prompt", "To be", "--out", "never-written.npz"], "No model was named"),
    # boundary27: bytes that are not UTF-8 (Python's argv keeps them as lone surrogates) became U+FFFD silently
    (["trace", *MODEL, "--prompt", b"caf\xe9 \xff".decode("utf-8", "surrogateescape"), "--out", "never-written.npz"],
     "--prompt: 'caf\\xe9 \\xff' is not UTF-8 text (byte 0xe9 at character 4)"),
    (["attribute", *MODEL, "--prompt", b"\xe9".decode("utf-8", "surrogateescape")], "--prompt: '\\xe9' is not UTF-8"),
    (["patch", *MODEL, "--clean", "a b", "--corrupt", "a c", "--target", b"\xff".decode("utf-8", "surrogateescape"),
      "--against", "x"], "--target: '\\xff' is not UTF-8 text"),
    (["--prompt", b"\xe9".decode("utf-8", "surrogateescape")], "--prompt: '\\xe9' is not UTF-8 text"),
    # a value that starts with "-" is read by argparse as an option: the sentence says how to give it
    (EXPORT + ["--size", "-5x10"], "--size: expected one argument; a value that starts with '-' is written --size="),
    (["trace", *MODEL, "--prompt", "-dash", "--out", "never-written.npz"], "is written --prompt=VALUE"),
])
def test_a_bad_value_is_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a refusal writes nothing: the outputs named above are looked for here
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in err, err
    assert list(tmp_path.iterdir()) == [], "a refused command wrote a file"


def test_export_of_a_huge_size_fails_fast_without_growing(tmp_path):
    """The refusal comes before the model loads or a pixel is drawn: the process stays small and quick."""
    done = subprocess.run([sys.executable, "-c",
                           "import sys\n"
                           "from explorer.cli import main\n"
                           f"code = main({EXPORT + ['--size', '30000x30000']!r})\n"
                           # VmHWM is this process's own peak: ru_maxrss keeps the forking parent's across exec
                           "print(next(line.split()[1] for line in open('/proc/self/status') "
                           "if line.startswith('VmHWM:')))\n"
                           "sys.exit(code)\n"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(__import__("pathlib").Path(__file__)
                                                                                 .resolve().parents[2])})
    assert done.returncode == 2 and "30000x30000 pixels is too large" in done.stderr
    assert int(done.stdout.strip()) < 1024 * 1024, "peak memory (KiB) stayed far below the 3.6 GB of one such image"
