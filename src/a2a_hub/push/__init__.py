"""Push notifications: webhook URL safety (:mod:`a2a_hub.push.urls`)."""
