"""The embedded UI the host application frames, and the origin proxy it reads."""
