// The `openclip` executable: the CLI's objects (every other src/cli/*.cpp) and this main.
#include "cli/command.h"

int main(int argc, char** argv) { return oc::cli::run_main(argc, argv); }
