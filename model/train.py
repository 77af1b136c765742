"""`python -m model.train ...` keeps working: the demo training command lives in tasks/train.py (see its --help)."""

from tasks.train import main

if __name__ == "__main__":
    main()
