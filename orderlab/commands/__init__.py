"""What each command does, joining the layers below: run a spec into a folder, check, compare."""
