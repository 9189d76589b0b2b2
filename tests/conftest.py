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
