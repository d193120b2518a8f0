"""What reads a Tree: its rules as text, generated code, the drawing's layout and its metrics."""
