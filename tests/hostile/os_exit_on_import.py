"""Ends the process while being imported."""
import os
EXPECT = {"score": 0, "words": "exit status 0"}
os._exit(0)
