"""The examples in examples/ reach the figures their README states (slow: each trains a model)."""

from __future__ import annotations

import contextlib
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    """Import examples/<name>.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"gradlab_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Run with one BLAS thread when threadpoolctl (scikit-learn's dependency) is there.

    These models multiply many small matrices; on a 2-core machine shared with other work, two
    OpenBLAS threads fighting for the cores made the char model up to six times slower. The figures
    don't depend on it: only the time does.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(limits=1, user_api="blas")
    with limits:
        yield


@pytest.mark.slow
def test_spiral_mlp_reaches_95_percent_training_accuracy(capsys):
    assert load("spiral_mlp").main() >= 0.95
    out = capsys.readouterr().out
    assert "% of the 1000 training points right" in out
    picture = [line for line in out.splitlines() if set(line) <= set(".#ox")]
    assert len(picture) == 21 and {"#", ".", "o", "x"} <= set("".join(picture))


@pytest.mark.slow
def test_digits_cnn_reaches_97_percent_held_out_accuracy():
    pytest.importorskip("sklearn", reason="the digits ship with scikit-learn (pip install scikit-learn)")
    assert load("digits_cnn").main(quiet=True) >= 0.97


@pytest.mark.slow
def test_char_model_loss_falls_below_its_target_and_it_writes(capsys):
    example = load("char_model")
    loss = example.main()
    assert loss < example.TARGET_LOSS == 1.7
    out = capsys.readouterr().out
    assert f"training loss {loss:.3f} nats/char" in out
    sample = out[out.index("Shall I compare thee"):-1]  # the sample is the last thing printed
    assert len(sample) == len("Shall I compare thee") + 300
    assert set(sample) <= set(example.load_text("sonnets"))


def test_the_bundled_text_loads_and_is_what_the_char_model_expects():
    from gradlab.data import TEXT_NAMES, load_text

    assert "sonnets" in TEXT_NAMES
    text = load_text("sonnets")
    assert 20_000 < len(text) < 60_000 and text.isascii()
    assert text.startswith("THE SONNETS\n") and "\n\nLX\n\nLike as the waves make towards the pebbled shore," in text
    assert text.count("\n\n\n") == 60  # sixty sonnets, each after two blank lines
    with pytest.raises(ValueError, match="unknown text 'hamlet'; choose one of 'sonnets'"):
        load_text("hamlet")
