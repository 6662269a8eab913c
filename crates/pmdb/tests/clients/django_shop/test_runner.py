"""Django's own test runner against a server, as `manage.py test` runs it: it makes the
test database with CREATE DATABASE (connected to the `postgres` database), migrates
it, runs `shop/tests.py` there, and drops it. It prints `OK` at the end; a failed test
or a database left behind raises.

Usage: python3 test_runner.py PORT [HOST]
"""

from shop_settings import set_up

set_up()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import get_runner  # noqa: E402

runner = get_runner(settings)(verbosity=1, interactive=False)
failures = runner.run_tests(["shop"])
assert failures == 0, f"{failures} tests failed"
with connection.cursor() as c:
    c.execute("SELECT datname FROM pg_database ORDER BY 1")
    left = [r[0] for r in c.fetchall()]
assert "test_pmdb" not in left, left
print("OK")
