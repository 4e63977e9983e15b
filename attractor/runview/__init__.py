"""The read side: what front ends read runs back with (the runs of a logs
folder, a run's state and its timeline), from the run store alone."""
