"""Analytics and exports (issue 15): the management API's usage, cost, performance, error
and cache figures of a workspace over a period of UTC days, and files exported from them."""
