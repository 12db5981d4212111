"""Models the size researchers use, written once for either library: ``resnet18(gl)`` or ``resnet18(torch)``.

gradlab's API follows PyTorch's, so the same code builds a ResNet-18 and a 12-block GPT-2 small
(d_model 768, 12 heads, nanoGPT's layout) in ``gradlab.nn`` or in plain ``torch.nn``: the graphs the
lab draws of them have the same modules. Shared by the layout tests, the browser test and
benchmarks/bench_big_graphs.py.
"""

from __future__ import annotations

import math


def resnet18(lib, num_classes: int = 1000):
    """torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]), written in ``lib.nn``."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.layer1 = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 64))
            self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128))
            self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256))
            self.layer4 = nn.Sequential(BasicBlock(256, 512, 2), BasicBlock(512, 512))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet()


def gpt2(lib, n_layer: int = 12, n_head: int = 12, n_embd: int = 768, vocab_size: int = 50257,
         block_size: int = 1024):
    """GPT-2 small as nanoGPT writes it (pre-norm blocks, fused qkv, GELU MLP, tied head), in ``lib.nn``."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout = nn.Dropout(0.0)
            self.resid_dropout = nn.Dropout(0.0)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
            mask = lib.tril(lib.ones(T, T)).view(1, 1, T, T)
            att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
            y = self.attn_dropout(att) @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.drop = nn.Dropout(0.0)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying, as GPT-2

        def forward(self, idx):
            _, t = idx.shape
            pos = lib.arange(0, t, dtype=lib.long)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def gpt2_block(lib, n_embd: int = 768, n_head: int = 12):
    """One GPT-2 block alone (what record()'s overhead is measured on)."""
    return gpt2(lib, n_layer=1, n_head=n_head, n_embd=n_embd, vocab_size=8, block_size=64).h[0]
