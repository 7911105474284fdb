// cmd_engine.h - the engine's commands: `quench gen` and `quench engine` (cmd_engine.cc).
#pragma once

// Return: the process exit status. `first` indexes argv after the command word.
int cmd_gen(int argc, char **argv, int first);
int cmd_engine(int argc, char **argv, int first);
