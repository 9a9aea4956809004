"""The colours every figure draws with (no matplotlib here: the arm table reads them without drawing)."""

# Paul Tol's qualitative schemes (https://personal.sron.nl/~pault/): distinct for the common forms of
# colour blindness; "bright" has 6 hues + grey, "muted" 9.
TOL_BRIGHT = {"blue": "#4477AA", "cyan": "#66CCEE", "green": "#228833", "yellow": "#CCBB44",
              "red": "#EE6677", "purple": "#AA3377", "grey": "#BBBBBB"}
TOL_MUTED = {"indigo": "#332288", "cyan": "#88CCEE", "teal": "#44AA99", "green": "#117733",
             "olive": "#999933", "sand": "#DDCC77", "rose": "#CC6677", "wine": "#882255", "purple": "#AA4499"}
# from Paul Tol's vibrant scheme: arm colours when the bright seven are taken (the society study's designs)
TOL_VIBRANT = {"orange": "#EE7733", "magenta": "#EE3377", "red": "#CC3311", "teal": "#009988", "blue": "#0077BB",
               "cyan": "#33BBEE"}
REFERENCE_GREY = "#555555"  # baselines drawn as a reference (sgd) and reference lines
# from Paul Tol's high-contrast, medium-contrast and light schemes: the lineage study's arms and the looks kept apart;
# brown from his discrete rainbow (colour 28): full@seed_budget, the one hue left apart from the society study's nine
# other arms (CIEDE2000 ≥ 27.8 from each; his qualitative schemes' teal read as full@matched's green, 19.2)
TOL_EXTRA = {"dark_blue": "#004488", "ochre": "#DDAA33", "pear": "#BBCC33", "dark_yellow": "#997700",
             "dark_red": "#994455", "black": "#000000", "brown": "#72190E",
             # the climb's own (issue 54): climb_single was continue_archive's ochre and the hints baseline read as
             # distill-all iterated's cyan; Tol's light orange and light scheme's olive are ≥ 26 CIEDE2000 from every
             # other Fig. 3j arm
             "light_orange": "#EE8866", "olive": "#AAAA00"}
