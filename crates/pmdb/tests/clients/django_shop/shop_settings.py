"""The settings both scripts run the application with: the shop app on the server at
PORT [HOST] given on the command line, database `pmdb`, user `pmdb`."""

import os
import sys

import django
from django.conf import settings


def set_up():
    port = sys.argv[1]
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    settings.configure(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "pmdb",
                "USER": "pmdb",
                "HOST": host,
                "PORT": port,
            }
        },
        INSTALLED_APPS=["shop"],
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    django.setup()
