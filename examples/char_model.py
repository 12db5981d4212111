"""A character-level LSTM learns to write like Shakespeare's sonnets, one letter at a time.

The model reads the text a character at a time and, after each one, gives a score to every
character that could come next; training makes the right one likely. Its loss, the cross-entropy,
is the average surprise per character in nats (divide by ln 2 for bits): guessing uniformly among
the text's 59 characters costs ln 59 = 4.08 nats, knowing only how common each letter is about
3.1; the LSTM gets below 1.7 by remembering what came before: the word it is in, the line it is on.
Run it with

    python examples/char_model.py

It trains on the first 54 of the 60 sonnets that ship with gradlab (``gradlab.data.load_text``),
reports the loss on the 6 it never saw, and writes a short sample at the end (examples/README.md
gives the figures and time measured).
"""

from __future__ import annotations

import math
import time

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.data import DataLoader, TensorDataset, load_text
from gradlab.training import fit

TARGET_LOSS = 1.7  # nats per character, on the training text, averaged over the last epoch


class CharLSTM(nn.Module):
    """Character ids (N, T) -> scores (N, T, vocab) for the character that follows each one."""

    def __init__(self, vocab_size: int, embedding_dim: int = 32, hidden_size: int = 128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embedding_dim)  # each character id -> a learned vector
        self.lstm = nn.LSTM(embedding_dim, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, ids):
        return self.run(ids)[0]

    def run(self, ids, state=None):
        """The scores, and the LSTM's memory (h, c) after the last character, to carry on from there."""
        hidden, state = self.lstm(self.embed(ids), state)
        return self.head(hidden), state


def sequence_loss(logits, targets):
    """Cross-entropy over every position of every sequence: (N, T, vocab) scores, (N, T) targets."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def windows(ids, length: int):
    """Cut the text into pieces of ``length`` characters; each target is the input shifted by one."""
    count = (len(ids) - 1) // length
    inputs = ids[:count * length].reshape(count, length)
    targets = ids[1:count * length + 1].reshape(count, length)
    return inputs, targets


def generate(model: CharLSTM, vocab: list, prompt: str, length: int = 300, temperature: float = 0.8,
             generator=None) -> str:
    """Continue ``prompt`` for ``length`` characters, drawing each from the model's probabilities.

    A temperature below 1 sharpens the distribution (safer, more repetitive text), above 1 flattens it.
    """
    index = {char: i for i, char in enumerate(vocab)}
    was_training = model.training
    model.eval()
    with gl.no_grad():
        logits, state = model.run(gl.tensor([[index[char] for char in prompt]]))
        written = []
        for _ in range(length):
            probs = (logits[0, -1] / temperature).softmax(-1)
            next_id = probs.multinomial(1, generator=generator).item()
            written.append(vocab[next_id])
            logits, state = model.run(gl.tensor([[next_id]]), state)  # feed it back in, memory and all
    model.train(was_training)
    return prompt + "".join(written)


def main(epochs: int = 20, seed: int = 0, quiet: bool = False) -> float:
    """Train the LSTM; return the training loss of the last epoch, in nats per character."""
    gl.manual_seed(seed)
    text = load_text("sonnets")
    vocab = sorted(set(text))
    ids = gl.tensor([vocab.index(char) for char in text])

    inputs, targets = windows(ids, length=64)
    held_out = len(inputs) // 10  # the last sonnets: text the model never trains on
    train_loader = DataLoader(TensorDataset(inputs[:-held_out], targets[:-held_out]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(inputs[-held_out:], targets[-held_out:]), batch_size=256)

    model = CharLSTM(len(vocab))
    optimizer = gl.optim.Adam(model.parameters(), lr=0.01)
    scheduler = gl.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)

    start = time.perf_counter()
    history = fit(model, train_loader, sequence_loss, optimizer, epochs=epochs, val_loader=val_loader,
                  scheduler=scheduler, progress=not quiet)
    seconds = time.perf_counter() - start

    loss, val_loss = history["train_loss"][-1], history["val_loss"][-1]
    if not quiet:
        print(f"char model: training loss {loss:.3f} nats/char ({loss / math.log(2):.2f} bits), "
              f"held-out {val_loss:.3f} ({val_loss / math.log(2):.2f} bits), after {epochs} epochs, {seconds:.1f} s "
              f"(target: below {TARGET_LOSS} nats)")
        print("\n" + generate(model, vocab, "Shall I compare thee", generator=gl.Generator().manual_seed(seed)))
    return loss


if __name__ == "__main__":
    main()
