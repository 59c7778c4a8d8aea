"""What the `train` and `translate` commands need from their process: no jsonschema (a GPU machine's
image has torch but not the workflow's config checker), and cuDNN's attention off (it plans per batch
shape: benchmarks/results/gpu_amp_shapes_h200.md). Both are checked in a child process, because the
commands set process-wide state."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import sys, json
sys.modules["jsonschema"] = None  # importing it now raises ImportError, as on a machine without it
import torch
from nmtvariants.cli import main
before = torch.backends.cuda.cudnn_sdp_enabled()
settings = json.loads(sys.argv[1])
code = main(["train", "--config-json", json.dumps(settings), "--outdir", sys.argv[2], "--threads", "1",
             "--no-progress"])
after_train = torch.backends.cuda.cudnn_sdp_enabled()
torch.backends.cuda.enable_cudnn_sdp(True)
code2 = main(["translate", "--checkpoint", sys.argv[2] + "/final.pt", "--vocab", sys.argv[3],
              "--input", sys.argv[4], "--output", sys.argv[5], "--beam", "2", "--threads", "1"])
print(json.dumps([code, code2, before, after_train, torch.backends.cuda.cudnn_sdp_enabled()]))
"""


def test_train_and_translate_run_without_jsonschema_and_keep_attention_off_cudnn(tmp_path):
    lines = [" ".join("abcdefgh"[(i + j) % 8] for j in range(3 + i % 4)) for i in range(40)]
    (tmp_path / "train.src").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "train.tgt").write_text("\n".join(line[::-1] for line in lines) + "\n", encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\n".join(["<pad>", "<s>", "</s>", "<unk>", *"abcdefgh"]) + "\n")
    settings = {
        "data": {
            "train_src": str(tmp_path / "train.src"),
            "train_tgt": str(tmp_path / "train.tgt"),
            "vocab": str(tmp_path / "vocab.txt"),
        },
        "model": {"preset": "tiny"},
        "train": {"max_updates": 2, "batch_tokens": 200, "warmup": 1, "save_every": 2},
    }
    command = [
        sys.executable,
        "-c",
        CHILD,
        json.dumps(settings),
        str(tmp_path / "run"),
        str(tmp_path / "vocab.txt"),
        str(tmp_path / "train.src"),
        str(tmp_path / "hyp.txt"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.splitlines()[-1])
    train_code, translate_code, before, after_train, after_translate = outcome
    assert (train_code, translate_code) == (0, 0), done.stderr[-3000:]
    assert before is True  # torch's default, so the commands' switch is what turned it off
    assert after_train is False
    assert after_translate is False
    assert len((tmp_path / "hyp.txt").read_text(encoding="utf-8").splitlines()) == len(lines)
