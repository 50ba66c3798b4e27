"""kernelspec: Jupyter kernelspecs that start an existing kernel under `cudanap run`.

`cudanap kernel` parses the command line and runs this file with the Python that runs Jupyter, so
that jupyter_client's KernelSpecManager decides where kernels are found and installed, exactly as
`jupyter kernelspec` would. Its arguments are fixed, one form per action (the C side checked them):

    kernelspec.py install CUDANAP FROM NAME NAP_S CONFIG WHERE PREFIX
    kernelspec.py list [json]
    kernelspec.py remove NAME...
    kernelspec.py probe           (exit 0 when jupyter_client imports here)

It runs isolated and without site (python -I -S, from /): neither the working directory nor
PYTHON* variables put anything on sys.path, and no site directory is added, nor its .pth files
run, until it is checked here: only one that root or the caller alone could have written (the
directory, every directory above it, and every directory, file and .pth file in it and what its
links name), so that root running it imports nothing another user wrote. A caller other than root
gets its own user site back (pip install --user).

WHERE is user, sys-prefix or prefix (then PREFIX is the directory); CONFIG is "" for none. A
kernelspec is cudanap's when its metadata has a "cudanap" object; install and remove touch no
other. Exit status: 0, 1 when an action failed (one line on stderr each), 69 when jupyter_client
cannot be imported."""
import json
import os
import shutil
import sys
import tempfile

import site  # noqa: E402 (its directories are added below, once checked)


def ours_alone(path):
    """Whether path, and every directory above it, only root or this user could have written."""
    path = os.path.realpath(path)
    while True:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_uid not in (0, os.getuid()) or st.st_mode & 0o022:
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def _fail(e):
    raise e


def tree_ours_alone(d):
    """Whether everything in the tree at d (every directory and file, and what each link names,
    and the trees of the directories links name) only root or this user could have written: a
    package is imported from anywhere in it."""
    todo, seen = [d], set()
    while todo:
        top = os.path.realpath(todo.pop())
        if top in seen:
            continue
        seen.add(top)
        for root, dirs, files in os.walk(top, onerror=_fail):
            for name in dirs + files:
                p = os.path.join(root, name)
                if os.path.islink(p):
                    # what it names; where it names nothing yet, where that would be made
                    if not ours_alone(p if os.path.exists(p)
                                      else os.path.dirname(os.path.realpath(p))):
                        return False
                    if os.path.isdir(p):
                        todo.append(p)
                    continue
                st = os.lstat(p)
                if st.st_uid not in (0, os.getuid()) or st.st_mode & 0o022:
                    return False
    return True


def add_site(d):
    """d on sys.path with its .pth files, if it and everything in it are ours alone."""
    if not os.path.isdir(d) or not ours_alone(d):
        return
    try:
        if tree_ours_alone(d):
            site.addsitedir(d)
    except OSError:
        pass


if sys.flags.no_site:
    for d in site.getsitepackages():
        add_site(d)
    if os.getuid() != 0:
        add_site(site.getusersitepackages())

# jupyter_client imports ipykernel to describe the default kernel, and ipykernel's debugger
# warns about frozen modules on every import: not this command's business
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
try:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
except ImportError as e:
    sys.stderr.write(f"cudanap kernel: {sys.executable} cannot import jupyter_client ({e}); "
                     "set CUDANAP_PYTHON to the Python that runs Jupyter\n")
    sys.exit(69)


def fail(msg):
    sys.stderr.write(f"cudanap kernel: {msg}\n")
    return 1


def ours(spec):
    """cudanap's settings of a kernelspec (a dict or a KernelSpec), or None."""
    meta = spec.get("metadata") if isinstance(spec, dict) else spec.metadata
    mine = meta.get("cudanap") if isinstance(meta, dict) else None
    return mine if isinstance(mine, dict) else None


def claims_ours(spec):
    """Whether a kernelspec says it is cudanap's, well-formed or not."""
    meta = spec.get("metadata") if isinstance(spec, dict) else spec.metadata
    return isinstance(meta, dict) and "cudanap" in meta


def shown(text):
    """A kernelspec's words as a terminal may show them: control characters (C0, DEL, C1) as '?'."""
    return "".join("?" if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f else c for c in str(text))


def wrapped_argv(cudanap, nap_s, config, argv):
    out = [cudanap, "run"]
    if config:
        out += ["-c", config]
    return out + ["--nap", str(nap_s), "--"] + list(argv)


def install(ksm, cudanap, src_name, name, nap_s, config, where, prefix):
    try:
        src = ksm.get_kernel_spec(src_name)
    except NoSuchKernel:
        names = ", ".join(sorted(ksm.find_kernel_specs())) or "none"
        return fail(f"no kernel named '{src_name}' (kernels here: {names})")
    if claims_ours(src):
        wraps = shown((ours(src) or {}).get("from", "?"))
        return fail(f"kernel '{src_name}' already runs under cudanap (it wraps "
                    f"'{wraps}'); install from that one")
    if name == src_name:
        return fail(f"the wrapper needs a name of its own, not '{src_name}' (the kernel it wraps)")
    try:
        old = ksm.get_kernel_spec(name)
    except NoSuchKernel:
        old = None
    if old is not None and not claims_ours(old):
        return fail(f"a kernel named '{name}' exists and is not cudanap's "
                    f"({shown(old.resource_dir)}); "
                    "choose another --name")
    meta = dict(src.metadata or {})
    meta["cudanap"] = {"from": src_name, "nap_s": nap_s, "config": config or None}
    spec = {
        "argv": wrapped_argv(cudanap, nap_s, config, src.argv),
        "display_name": f"{src.display_name} (cudanap)",
        "language": src.language,
        "metadata": meta,
    }
    if src.env:
        spec["env"] = dict(src.env)
    if src.interrupt_mode and src.interrupt_mode != "signal":
        spec["interrupt_mode"] = src.interrupt_mode
    with tempfile.TemporaryDirectory(prefix="cudanap-kernel.") as tmp:
        stage = os.path.join(tmp, name)
        # the source's other files (its logos) come along; kernel.json is ours
        if src.resource_dir and os.path.isdir(src.resource_dir):
            shutil.copytree(src.resource_dir, stage,
                            ignore=shutil.ignore_patterns("kernel.json", "__pycache__"))
        else:
            os.mkdir(stage)
        with open(os.path.join(stage, "kernel.json"), "w") as f:
            json.dump(spec, f, indent=1)
            f.write("\n")
        try:
            dest = ksm.install_kernel_spec(stage, kernel_name=name, user=where == "user",
                                           prefix=sys.prefix if where == "sys-prefix"
                                           else prefix if where == "prefix" else None)
        except (OSError, ValueError) as e:
            return fail(f"cannot install kernel '{name}': {e}")
    nap = f"naps after {nap_s} s idle" if nap_s else "never naps by itself"
    print(f"installed kernel '{name}' ({shown(src.display_name)} under cudanap, {nap}) in "
          f"{shown(dest)}")
    return 0


def list_entry(name, spec, where):
    """What the listing says of one kernel: its name, directory, whether it is cudanap's, its nap
    (seconds, 0: off), what it wraps, and why it is broken (None when it is not)."""
    entry = {"name": name, "directory": where, "cudanap": claims_ours(spec), "nap_s": None,
             "wraps": None, "broken": None}
    if not entry["cudanap"]:
        return entry
    mine = ours(spec)
    nap_s = mine.get("nap_s") if mine else None
    argv = spec.get("argv")
    if not mine or not isinstance(nap_s, int) or isinstance(nap_s, bool) or nap_s < 0 \
            or not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        fail(f"kernel '{shown(name)}': {shown(where)}/kernel.json is not one cudanap wrote "
             "(metadata.cudanap, its nap_s or its argv malformed); listed as broken")
        entry["broken"] = "its kernel.json is not one cudanap wrote"
        return entry
    entry["nap_s"] = nap_s
    entry["wraps"] = str(mine.get("from", "?"))
    if not os.access(argv[0], os.X_OK):
        entry["broken"] = f"{argv[0]} missing"
    return entry


def list_row(e):
    """One row of the table: NAME, NAP, WRAPS, DIRECTORY."""
    if not e["cudanap"]:
        return (e["name"], "-", "-", e["directory"])
    if e["nap_s"] is None:
        return (e["name"], "broken", "?", e["directory"])
    nap = f"{e['nap_s']} s" if e["nap_s"] else "off"
    if e["broken"]:
        nap = f"broken: {e['broken']}"
    return (e["name"], nap, e["wraps"], e["directory"])


def list_all(ksm, as_json):
    specs = ksm.get_all_specs()
    entries = []
    for name in sorted(specs):
        entry = specs[name] if isinstance(specs[name], dict) else {}
        spec = entry.get("spec") if isinstance(entry.get("spec"), dict) else {}
        entries.append(list_entry(name, spec, entry.get("resource_dir", "?")))
    if as_json:
        # json.dumps writes ASCII: a kernelspec's control characters come out escaped
        print(json.dumps({"kernels": [{k: shown(v) if isinstance(v, str) else v
                                       for k, v in e.items()} for e in entries]}))
        return 0
    rows = [("NAME", "NAP", "WRAPS", "DIRECTORY")]
    rows += [tuple(shown(c) for c in list_row(e)) for e in entries]
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(r[i].ljust(width[i]) for i in range(3)) + "  " + r[3])
    return 0


def remove(ksm, names):
    rc = 0
    for name in names:
        try:
            spec = ksm.get_kernel_spec(name)
        except NoSuchKernel:
            rc = fail(f"no kernel named '{name}'")
            continue
        if not claims_ours(spec):
            rc = fail(f"kernel '{name}' is not cudanap's ({shown(spec.resource_dir)}); "
                      "'jupyter kernelspec remove' removes it")
            continue
        try:
            where = ksm.remove_kernel_spec(name)
        except OSError as e:
            rc = fail(f"cannot remove kernel '{name}': {e}")
            continue
        print(f"removed kernel '{name}' ({shown(where)})")
    return rc


def main(argv):
    ksm = KernelSpecManager()
    if argv[0] == "install" and len(argv) == 8:
        return install(ksm, argv[1], argv[2], argv[3], int(argv[4]), argv[5], argv[6], argv[7])
    if argv[0] == "probe" and len(argv) == 1:
        return 0
    if argv[0] == "list" and len(argv) == 1:
        return list_all(ksm, False)
    if argv[0] == "list" and argv[1:] == ["json"]:
        return list_all(ksm, True)
    if argv[0] == "remove" and len(argv) > 1:
        return remove(ksm, argv[1:])
    return fail("kernelspec.py: bad arguments " + " ".join(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
