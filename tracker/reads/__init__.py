"""What the reading commands look up without the daemon: the local database, plan inputs."""
