"""What a running job measures of itself: device, node and step records, read by the views."""
