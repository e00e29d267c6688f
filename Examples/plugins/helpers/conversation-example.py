#!/usr/bin/env python3
"""An example helper speaking swift-gatekeeper's conversation protocol (JSON lines on standard input and
output): the demonstration accounts alice/wonderland and bob/builder; bob is also asked a visible question
and shown a message, to show the whole conversation. Never real passwords."""
import json
import sys

ACCOUNTS = {"alice": ("wonderland", ["staff", "admin"]), "bob": ("builder", ["staff"])}


def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(prompt, echo):
    say({"prompt": prompt, "echo": echo})
    reply = json.loads(sys.stdin.readline() or "{}")
    if "answer" not in reply:
        sys.exit(0)  # cancelled
    return reply["answer"]


start = json.loads(sys.stdin.readline())
user = start["user"]
password = ask("Password: ", False)  # asked whether or not the user exists
account = ACCOUNTS.get(user)
if account is None:
    say({"outcome": "user_unknown"})
elif password != account[0]:
    say({"outcome": "rejected", "rejection": "wrong_credentials"})
else:
    if user == "bob":
        colour = ask("Favourite colour: ", True)
        say({"info": "Noted: " + colour})
    say({"outcome": "authenticated", "user": user, "groups": account[1], "attributes": {"helper": "example"}})
