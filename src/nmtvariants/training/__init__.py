"""Trainer (AMP, delayed updates, DDP), Noam schedule, losses, checkpoints, averaging."""
