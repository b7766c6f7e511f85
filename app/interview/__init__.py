"""The interview engine: question selection, turns, follow-ups, hints and adaptive difficulty."""
