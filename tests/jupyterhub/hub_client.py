"""A JupyterHub user's client, for tests/jupyterhub/hub.sh: it logs in through the Hub's login page
(PAM), starts the user's server and kernels through the Hub's and the notebook server's REST API,
and runs cells over the kernel's websocket, as a browser's notebook page does (Jupyter's
messages, JSON over the websocket, tornado's client). One line per command read from stdin:

    login USER PASSWORD     "login USER ok" once the Hub's cookie is set, else "login USER failed WHY"
    spawn USER              "spawn USER ok URL" once the user's server answers (the Hub's API)
    kernel USER SPEC        "kernel USER ok ID PID": a kernel of kernelspec SPEC started, its pid
                            (default: none named, the notebook server's default kernel)
    cell USER NAME [ARG]    runs CELLS[NAME] (ARG in its {arg}) in USER's kernel: "cell USER NAME
                            ok|error ENAME SECONDS OUTPUT..." (its stdout on one line)
    stderr USER             what its cells wrote on stderr so far: "stderr USER TEXT"
    stop USER               its kernel shut down and its server stopped: "stop USER ok"

The cells' "GPU" is the fake driver's (FAKECUDA), through the preload's entry points."""
import json
import os
import sys
import time
import uuid

import requests
from tornado import ioloop, websocket

HUB = os.environ["HUB_URL"].rstrip("/")

CELLS = {
    "info": "import os\nprint(os.getpid(), os.getuid(), 'libcudanap' in open('/proc/self/maps').read())",
    # its GPU: the fake driver's context, a first pattern of 256 MiB, then {arg} MiB more through
    # cuMemAlloc_v2 (the preload's entry point: what cudanap owns, a light nap moves), a word
    # written in each
    "hold": "import ctypes, os\n"
            "lib = ctypes.CDLL(os.environ['FAKECUDA'])\n"
            "d, v, ctx = ctypes.CDLL(None), ctypes.c_void_p, ctypes.c_void_p()\n"
            "DATA = bytes((i * 131 + 7) % 256 for i in range(256)) * 4096\n"
            "assert lib.fake_register() == 0\n"
            "assert lib.fake_memcpy_htod(ctypes.c_size_t(0), DATA, ctypes.c_size_t(len(DATA))) == 0\n"
            "assert d.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0\n"
            "assert d.cuCtxSetCurrent(ctx) == 0\n"
            "ptr = ctypes.c_uint64()\n"
            "rc = d.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t({arg} << 20))\n"
            "word = ctypes.c_uint(0xC0FFEE + os.getuid())\n"
            "print('alloc', rc, rc == 0 and lib.fake_vmm_word(ctypes.c_uint64(ptr.value + (1 << 20)), True, ctypes.byref(word)))",
    "verify": "got, out = ctypes.c_uint(), ctypes.create_string_buffer(len(DATA))\n"
              "print('launch', lib.cuLaunchKernel(None, 5, 2, 3, 4, 5, 6, 7, v(8), v(9), v(10)),\n"
              "      'word', lib.fake_vmm_word(ctypes.c_uint64(ptr.value + (1 << 20)), False, ctypes.byref(got)),\n"
              "      got.value == 0xC0FFEE + os.getuid(),\n"
              "      'data', lib.fake_memcpy_dtoh(out, ctypes.c_size_t(0), ctypes.c_size_t(len(DATA))) == 0 and out.raw == DATA)",
}


class User:
    def __init__(self, name):
        self.name = name
        self.http = requests.Session()
        self.token = None
        self.kernel = None
        self.ws = None
        self.session = uuid.uuid4().hex
        self.stderr = ""

    def api(self, method, path, **kw):
        headers = {"Referer": f"{HUB}/hub/"}
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        r = self.http.request(method, f"{HUB}{path}", headers=headers, timeout=60, **kw)
        return r

    def login(self, password):
        self.http.get(f"{HUB}/hub/login", timeout=60)
        r = self.http.post(f"{HUB}/hub/login?next=", data={"username": self.name, "password": password},
                           allow_redirects=False, timeout=60)
        if r.status_code != 302 or not any(c.name.startswith("jupyterhub-session-id") or
                                            c.name == "jupyterhub-hub-login" for c in self.http.cookies):
            return f"failed HTTP {r.status_code}"
        # a token of the user's, asked for with the Hub's cookie: what its page's API calls carry
        r = self.api("POST", f"/hub/api/users/{self.name}/tokens", json={"note": "cudanap test"})
        if r.status_code not in (200, 201):
            return f"failed: no token (HTTP {r.status_code} {r.text[:200]})"
        self.token = r.json()["token"]
        return "ok"

    def spawn(self):
        r = self.api("POST", f"/hub/api/users/{self.name}/server")
        if r.status_code not in (201, 202, 400):  # 400: running already
            return f"failed HTTP {r.status_code} {r.text[:200]}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            u = self.api("GET", f"/hub/api/users/{self.name}").json()
            server = (u.get("servers") or {}).get("", {})
            if server.get("ready"):
                r = self.api("GET", f"/user/{self.name}/api/status")
                if r.status_code == 200:
                    return f"ok {server.get('url')}"
            time.sleep(0.3)
        return "failed: the server was not ready in 120 s"

    def start_kernel(self, spec):
        # "default": none named, the server's default kernel (the Hub's Spawner.args set it)
        r = self.api("POST", f"/user/{self.name}/api/kernels", json={} if spec == "default" else {"name": spec})
        if r.status_code not in (200, 201):
            return f"failed HTTP {r.status_code} {r.text[:300]}"
        self.kernel = r.json()["id"]
        url = (HUB.replace("http", "ws", 1) +
               f"/user/{self.name}/api/kernels/{self.kernel}/channels?session_id={self.session}")
        req = websocket.httpclient.HTTPRequest(url, headers={"Authorization": f"token {self.token}"})
        self.ws = ioloop.IOLoop.current().run_sync(lambda: websocket.websocket_connect(req), timeout=60)
        status, _, secs, text = self.execute(CELLS["info"], 120)
        return f"ok {self.kernel} {text.split()[0] if status == 'ok' and text else '?'}"

    def message(self, msg_type, content):
        return {"header": {"msg_id": uuid.uuid4().hex, "username": self.name, "session": self.session,
                           "msg_type": msg_type, "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
                "buffers": []}

    def execute(self, code, timeout=120):
        """Runs code; its status, the error's name, the seconds to its reply and its stdout."""
        msg = self.message("execute_request", {"code": code, "silent": False, "store_history": True,
                                               "user_expressions": {}, "allow_stdin": False,
                                               "stop_on_error": True})
        t0 = time.monotonic()
        self.ws.write_message(json.dumps(msg))
        out, err, ename, status, idle = [], [], "", None, False
        deadline = t0 + timeout

        async def read():
            return await self.ws.read_message()

        while status is None or not idle:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout", "", time.monotonic() - t0, " ".join("".join(out).split())
            raw = ioloop.IOLoop.current().run_sync(read, timeout=left)
            if raw is None:
                return "closed", "", time.monotonic() - t0, ""
            m = json.loads(raw)
            if m.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                (out if content["name"] == "stdout" else err).append(content["text"])
            elif kind == "error":
                ename = content["ename"]
            elif kind == "execute_reply":
                status = content["status"]
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        self.stderr = " ".join((self.stderr + " " + "".join(err)).split())
        return status, ename, time.monotonic() - t0, " ".join("".join(out).split())

    def cell(self, name, arg):
        status, ename, secs, text = self.execute(CELLS[name].replace("{arg}", arg or "0"))
        return f"{name} {status}" + (f" {ename}" if ename else "") + f" {secs:.2f} {text}"

    def stop(self):
        if self.kernel:
            self.api("DELETE", f"/user/{self.name}/api/kernels/{self.kernel}")
        self.api("DELETE", f"/hub/api/users/{self.name}/server")
        return "ok"


def main():
    users = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd, name, rest = words[0], words[1], words[2:]
        u = users.setdefault(name, User(name))
        try:
            if cmd == "login":
                out = u.login(rest[0])
            elif cmd == "spawn":
                out = u.spawn()
            elif cmd == "kernel":
                out = u.start_kernel(rest[0])
            elif cmd == "cell":
                out = u.cell(rest[0], rest[1] if len(rest) > 1 else None)
            elif cmd == "stderr":
                out = u.stderr
            elif cmd == "stop":
                out = u.stop()
            else:
                out = "unknown command"
        except Exception as e:  # one line: the test reads lines
            out = f"failed {type(e).__name__}: {' '.join(str(e).split())}"
        print(f"{cmd} {name} {out}", flush=True)


if __name__ == "__main__":
    main()
