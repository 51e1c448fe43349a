# the run's settings, exec'd over the script's defaults
learning_rate = 2.0
max_iters = 60
