"""The command line every experiment shares: its own options go on the parser this returns."""
import argparse


def parser(doc, out, raw_description=False):
    """An ArgumentParser with the experiments' common options.

    doc: the experiment's docstring (its first line, or all of it with raw_description, is the
    description); out: the default folder for results.
    """
    if raw_description:
        ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    else:
        ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a short run that checks the shape of the results, not the numbers (ctest)")
    ap.add_argument("--out", default=out, help=f"folder for the results (default {out})")
    ap.add_argument("--build", default="build", help="the build folder whose bin/ holds the binaries")
    ap.add_argument("--hosts", choices=["emulated", "loopback"], default=None,
                    help="emulated Atom-class hosts (needs root; the default as root) or local processes")
    ap.add_argument("--replicas", type=int, default=None,
                    help="the cluster's replication_factor (default: the cluster's, 2 on two or more nodes)")
    return ap


def replicas_toml(a):
    """The [cluster] line of --replicas, or nothing."""
    return "" if a.replicas is None else f"replication_factor = {a.replicas}\n"
