"""`python -m openclip_cpp ARGS...` (and the `openclip-cpp` script) run `openclip ARGS...`: the
CLI, inside this process."""
import sys

from . import _core


def main() -> int:
    return _core.cli_main(["openclip", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
