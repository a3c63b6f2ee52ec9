"""What model requests may spend and what they did: the budget's one door and the metering."""
