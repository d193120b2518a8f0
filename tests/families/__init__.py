"""Test-only model families: they show that a family plugs into treeviz without editing the frame."""
