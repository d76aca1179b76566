"""`python -m toolscore ARGS`: the `toolscore` command line."""

from toolscore._cli import main

if __name__ == "__main__":
    main()
