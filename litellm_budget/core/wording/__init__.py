"""What the model reads of what was removed: placeholders, the marker, its digest and names."""
