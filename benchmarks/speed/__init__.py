"""Speed and scale: how long the library's fits and steps take, one against another on this machine."""
