import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest
from support import debuggers
from support.paths import EXTENSION


@pytest.fixture(scope="session", autouse=True)
def prerequisites():
    if not os.path.exists(EXTENSION):
        pytest.exit("the extension is not built: run `make build` (make test does it)", returncode=2)
    debuggers.require_installed()


@pytest.fixture(params=debuggers.ALL, ids=debuggers.ALL_IDS)
def debugger(request):
    """Each test that takes this runs once under GDB and once under LLDB."""
    return request.param


# Files this big (cores, mostly) are removed when the test file that made them is done:
# kept to the end of the session they add up to 5 GB, more than a CI machine may have.
BIG_FILE = 16 << 20


@pytest.fixture(scope="module", autouse=True)
def remove_big_files_after_module(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    before = set(os.listdir(base))
    yield
    for name in set(os.listdir(base)) - before:
        for directory, _, files in os.walk(os.path.join(base, name)):
            for file in files:
                path = os.path.join(directory, file)
                try:
                    if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) >= BIG_FILE:
                        os.remove(path)
                except OSError:
                    pass
