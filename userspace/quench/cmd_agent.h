// cmd_agent.h - `quench agent TOPO`: the Soft-RoCE agent for a topology's rxe hosts (cmd_agent.cc).
#pragma once

// Return: the process exit status. `first` indexes argv after the command word.
int cmd_agent(int argc, char **argv, int first);
