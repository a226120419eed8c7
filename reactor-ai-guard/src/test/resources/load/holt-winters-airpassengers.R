# Reference values for dev.aiguard.load.HoltWinters and dev.aiguard.load.Holt.
#
# Regenerate (from this directory):
#   Rscript holt-winters-airpassengers.R > airpassengers-reference.txt
#
# Output format, one record per line, fields separated by single spaces:
#   case <name>                      starts a case; "end" closes it
#   series <n> <x1> ... <xn>         the observed values, in order
#   params <alpha> <beta> <gamma|FALSE> <frequency>
#   a / b / sse <value>              R's coef() a and b, and SSE
#   s <s1> ... <sf>                  R's coef() s1..sf (seasonal cases only)
#   fitted <t> <xhat> <level> <trend> [<season>]
#                                    R's fitted() row for time index t (1-based): the one-step
#                                    prediction of x[t] and the state it was made from
#   predict <h> <p1> ... <ph>        predict(hw, h)
# Numbers carry 17 significant digits, so they read back as the doubles R computed.

num <- function(v) sprintf("%.17g", v)
line <- function(...) cat(paste(c(...), collapse = " "), "\n", sep = "")

report <- function(name, x, alpha, beta, gamma, rows, h = 5) {
  hw <- HoltWinters(x, alpha = alpha, beta = beta, gamma = gamma, seasonal = "additive")
  cf <- coef(hw)
  seasonal <- !is.logical(gamma)
  line("case", name)
  line("series", length(x), num(as.vector(x)))
  line("params", num(alpha), num(beta), if (seasonal) num(gamma) else "FALSE", frequency(x))
  line("a", num(cf[["a"]]))
  line("b", num(cf[["b"]]))
  if (seasonal) line("s", num(cf[grep("^s", names(cf))]))
  line("sse", num(hw$SSE))
  fit <- hw$fitted
  start.time <- length(x) - nrow(fit) + 1
  for (t in rows) {
    r <- fit[t - start.time + 1, ]
    cols <- c(r[["xhat"]], r[["level"]], r[["trend"]])
    if (seasonal) cols <- c(cols, r[["season"]])
    line("fitted", t, num(cols))
  }
  line("predict", h, num(as.vector(predict(hw, h))))
  line("end")
}

cat("# ", R.version.string, ": stats::HoltWinters(x, alpha, beta, gamma, seasonal = \"additive\")\n", sep = "")

data(AirPassengers)
report("airpassengers-additive", AirPassengers, 0.3, 0.1, 0.2,
       rows = c(13:25, 36, 60, 100, 143, 144))
report("airpassengers-holt", AirPassengers, 0.3, 0.1, FALSE,
       rows = c(3, 4, 5, 10, 50, 100, 144))
# An odd season length (7) exercises decompose's plain moving average.
report("airpassengers-first84-weekly", ts(as.vector(AirPassengers)[1:84], frequency = 7), 0.5, 0.2, 0.3,
       rows = c(8:15, 30, 84), h = 9)
# Exactly two seasons: the start, then filtering of the second season only.
report("airpassengers-first24-additive", ts(as.vector(AirPassengers)[1:24], frequency = 12), 0.3, 0.1, 0.2,
       rows = c(13, 18, 24), h = 14)
