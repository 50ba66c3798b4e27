"""onpty: run a command on a pseudo-terminal, as a user's shell would, and print what it wrote.

    onpty.py RAW SCREEN CMD [ARG...]

The command's stdin, stdout and stderr are the terminal (its output not turned into CRLF). RAW gets
every byte it wrote, SCREEN what a terminal would show at the end (each carriage return going back
to the line's start). The exit status is the command's."""
import os
import pty
import sys
import termios


def screen(raw):
    lines = []
    for text in raw.split("\n"):
        cells = []
        col = 0
        for ch in text:
            if ch == "\r":
                col = 0
                continue
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
        lines.append("".join(cells).rstrip())
    return "\n".join(lines)


def main(argv):
    pid, fd = pty.fork()
    if pid == 0:
        attrs = termios.tcgetattr(0)
        attrs[1] &= ~termios.ONLCR
        termios.tcsetattr(0, termios.TCSANOW, attrs)
        os.execvp(argv[2], argv[2:])
    out = b""
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the command's end of the terminal closed
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    raw = out.decode(errors="replace")
    with open(argv[0], "w") as f:
        f.write(raw)
    with open(argv[1], "w") as f:
        f.write(screen(raw))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
