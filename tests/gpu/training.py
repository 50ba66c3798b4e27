"""What the training scripts of tests/gpu/peer.sh share: a reference run, or one served over stdin.

main(step, losses, answers): step() trains one step and appends its loss to losses (float.hex, bit
for bit). The first step (a compile, peer access turned on) is made and not counted. Then, with
argv[1] = STEPS, STEPS steps and their losses ("losses HEX...") are printed: the reference; with
argv[1] = --serve, "ready PID" is printed and one line answers each command on stdin:
  train N   N steps: "trained TOTAL"
  losses    "losses HEX..." every loss so far
  quit      the end
  NAME      answers[NAME](), for the script's own commands"""
import os
import sys


def main(step, losses, answers=None):
    answers = answers or {}
    step()
    losses.clear()
    if sys.argv[1] != "--serve":
        for _ in range(int(sys.argv[1])):
            step()
        print("losses", " ".join(losses), flush=True)
        return
    print("ready", os.getpid(), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "train":
            for _ in range(int(cmd[1])):
                step()
            print("trained", len(losses), flush=True)
        elif cmd[0] == "losses":
            print("losses", " ".join(losses), flush=True)
        elif cmd[0] == "quit":
            break
        elif cmd[0] in answers:
            print(answers[cmd[0]](), flush=True)
