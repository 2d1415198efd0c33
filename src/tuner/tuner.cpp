// tuner (owner: tuner component).
