"""An example colbench suite: a person knows a codeword; the agent asks for it and answers.

Kept light on purpose: colbench reads :mod:`.manifest` to list the suite, and that must not
import the env (a real suite's env would import its heavy dependencies).
"""
