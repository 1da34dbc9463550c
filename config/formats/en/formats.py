"""Date formats of the admin and the pages: times to the second (an order's steps are seconds apart)."""

DATETIME_FORMAT = "N j, Y, H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
TIME_FORMAT = "H:i:s"
