// cmd_model.h - `quench model`: the reference bottleneck model from the command line (cmd_model.cc).
#pragma once

// Return: the process exit status. `first` indexes argv after the command word.
int cmd_model(int argc, char **argv, int first);
