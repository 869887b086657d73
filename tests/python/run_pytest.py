"""Runs the Python package's tests under the interpreter that has Debian's python3-numpy, -pytest, -dask
(ctest: /usr/bin/python3 tests/python/run_pytest.py [pytest args]). Exit 77 (skipped, with the reason)
when those packages are missing."""
# Guarded: dask.distributed's worker processes start by importing the main module again.
if __name__ == "__main__":
    import sys

    missing = []
    for module in ("numpy", "pytest"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(f"skipped: {sys.executable} lacks {', '.join(missing)} (Debian: apt-get install python3-numpy "
              "python3-pytest python3-dask python3-distributed)")
        sys.exit(77)
    import pytest

    class Outcomes:
        """Counts results, so that a file whose every test skipped is reported skipped to ctest."""

        def __init__(self):
            self.passed, self.skipped = 0, []

        def pytest_runtest_logreport(self, report):
            if report.passed and report.when == "call":
                self.passed += 1
            elif report.skipped:
                self.skipped.append(report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped")

    outcomes = Outcomes()
    code = pytest.main(["-q", "-p", "no:cacheprovider"] + sys.argv[1:], plugins=[outcomes])
    if code == 0 and outcomes.passed == 0 and outcomes.skipped:
        print("skipped: " + "; ".join(sorted(set(outcomes.skipped))))
        sys.exit(77)
    sys.exit(code)
