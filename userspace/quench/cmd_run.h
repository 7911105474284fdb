// cmd_run.h - `quench run EXPERIMENT` and `quench compare RUN_A RUN_B` (cmd_run.cc).
#pragma once

// Return: the process exit status. `first` indexes argv after the command word.
int cmd_run(int argc, char **argv, int first);
int cmd_compare(int argc, char **argv, int first);
// `quench jitter [--seconds S] [--gap-us G]`: gaps in a spinning loop (preemption) per second.
int cmd_jitter(int argc, char **argv, int first);
// `quench analyze trace|numbers ...`: analyses of a run's outputs as JSON (transport/metrics.h).
int cmd_analyze(int argc, char **argv, int first);
